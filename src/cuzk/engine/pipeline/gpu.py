"""The GPU workers: each takes a batch of partitions from the GPU queue (the
scheduling rule of :mod:`.queues`), pins the key on its device with the
partition's working set, and proves each through
:func:`cuzk.engine.prove.prove_partition`, inside the partition's
reservations (:class:`LeaseScopes`). A device failure hands the partition to
:mod:`.failover`.

Where the key's L, A and B bases stream (a lean tier's ``shared_queries``),
a partition of a job of several is proved but for those MSMs: its part
(their scalars as compact sets in host memory, reserved in the host budget)
waits with the worker's others of the same circuit (:class:`Waiting`), and
the group is finished together, one pass a query over the streamed bases
(:func:`cuzk.engine.prove.finish_partitions`), when it holds
``[gpus] shared_pass_partitions`` parts (0: its job's partitions), when the
next batch is of another circuit or priority, when the queue has nothing for
the worker, or before the host budget would refuse the next part. A group
that is full while more partitions of its circuit come (:attr:`WorkerState.closing`)
is finished on side branches beside the next partitions' H MSMs, within the
plan's branch share of each one's MSM room, a pass at a time
(:class:`cuzk.engine.prove.SharedPasses`: the passes begun before a
carrier's H MSM ends, the last of them joined with it); where the next
partition does not take it (another circuit, no branch, a failure before
its H MSM), or before the next group closes, the rest is finished in turn.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cuzk.engine.budget import Cancelled, time_critical
from cuzk.engine.devices import Device
from cuzk.engine.health import is_device_failure
from cuzk.engine.jobs import Priority
from cuzk.engine.keystore import KeyStore
from cuzk.engine.pipeline.queues import PipelineBase, WorkerState, describe
from cuzk.engine.prove import (
    DeviceWitness,
    Scopes,
    SharedPasses,
    finish_partitions,
    prove_partition,
)
from cuzk.engine.scheduler import Closed, WorkItem
from cuzk.groth16 import prover

log = logging.getLogger(__name__)


@dataclass
class Waiting:
    """A partition proved but for its shared side queries' MSMs: its work item,
    its part (:class:`cuzk.engine.prove.PartitionProof` with ``deferred``),
    and the host reservation of its compact sets."""

    item: WorkItem
    part: Any
    hold: Any  # the host budget's Reservation (release())
    seconds: float  # its own GPU time so far
    at: float = field(default_factory=time.monotonic)  # when it joined the group


@dataclass
class Finish:
    """A full group's passes carried on the side branches of the next
    partitions' proofs (``prove_partition(beside=…)``), a pass at a time until
    each carrier's H MSM ends (:meth:`run`); the worker hands the group on
    once they are all done."""

    group: list[Waiting]
    passes: SharedPasses
    rounds: int = 0  # carriers its passes ran beside
    ran: bool = False  # its passes ran beside the partition just proved
    error: BaseException | None = None
    t: float = 0.0  # when it began and ended (monotonic)
    end: float = 0.0

    def run(self, key: Any, ending: Callable[[], bool]) -> None:
        """Passes, in the branch's thread, until ``ending()`` after one; an error
        is kept for the worker (it fails this group alone, never the
        partition beside it)."""
        self.ran, self.rounds = True, self.rounds + 1
        if not self.t:
            self.t = time.monotonic()
        try:
            self.passes.run(key, ending)
        except BaseException as e:
            self.error = e
        finally:
            self.end = time.monotonic()


class GpuWorkers(PipelineBase):
    """The GPU stage of :class:`cuzk.engine.pipeline.Pipeline`."""

    def _gpu_loop(self, state: WorkerState) -> None:
        try:
            self._gpu_batches(state)
        finally:
            self._drop_waiting(state)

    def _gpu_batches(self, state: WorkerState) -> None:
        dev = state.device
        assert dev is not None

        def claim(batch: list[WorkItem]) -> None:
            state.held = len(batch)

        while True:
            if self._stopping.is_set():
                raise Closed("gpu")
            if not self.health.healthy(dev.ordinal):
                self._give_back_waiting(state)
                self._recover(dev)
                continue
            # a group waiting for its shared passes is finished once nothing of its
            # circuit is on its way here, or after [scheduler] max_batch_wait_ms
            # (a full one, too, when no partition comes to carry it)
            if state.closing and not self._more_coming(state.closing):
                self._finish_closing(state)
            if state.waiting and not self._more_coming(state.waiting):
                self._finish_waiting(state)
            batch = self.synthesized.get_batch(
                self.config.scheduler.max_batch_size,
                timeout=0.05 if state.waiting or state.closing else 1.0,
                select=self._selector(dev, state.urgent),
                claim=claim,
            )
            # another circuit's work follows the group's passes (its key stays
            # put meanwhile); time-critical work goes first
            head = batch[0] if batch else None
            if state.waiting and head is not None and _closes(state.waiting, head):
                self._finish_waiting(state)
            for n, item in enumerate(batch):
                if not self.health.healthy(dev.ordinal) or (
                    n and self.synthesized.outranks(item.job.priority)
                ):
                    # the device failed in the middle of the batch, or work of a
                    # higher priority is queued: the rest go back (keeping their place)
                    for rest in batch[n:]:
                        self._give_back(rest)
                    break
                if state.closing and not item.urgent and not _joins(state.closing, item):
                    self._finish_closing(state)  # the next partition cannot carry it
                rounds = state.finish.rounds if state.finish is not None else 0
                try:
                    with time_critical(item.urgent):
                        self._gpu_one(state, item)
                finally:
                    state.held -= 1
                carried = state.finish is not None and state.finish.rounds > rounds
                if state.closing and not item.urgent and not carried:
                    self._finish_closing(state)  # not carried: the rest in turn
                if state.waiting and len(state.waiting) >= _group_size(self.config, state):
                    # full: its passes go beside the next partition's H MSM
                    self._finish_closing(state)
                    state.closing, state.waiting = state.waiting, []
            state.held = 0
            if batch:
                self.synthesized.poke()  # a free worker: placement may now pick it

    def _gpu_one(self, state: WorkerState, item: WorkItem) -> None:
        dev = state.device
        assert dev is not None
        job = item.job
        if job.finished:
            self.release(item)
            return
        state.job_id, state.kind, state.busy_since = job.job_id, job.kind.label, time.time()
        state.partition, state.circuit_id = item.index, job.circuit_id
        job.device = dev.label
        try:
            self._prove(item, dev, state)
        except Cancelled:
            if job.finished:
                self.release(item)
            else:  # the device failed while the partition waited for it
                self._give_back(item)
        except Exception as e:
            if is_device_failure(e):
                self._device_failed(dev, item, e)
            else:
                log.warning("job %s partition %d: proving failed: %s", job.job_id, item.index, e)
                self._fail(item, f"partition {item.index}: proving failed: {describe(e)}")
        finally:
            state.job_id = state.kind = state.circuit_id = ""
            state.partition = -1
            if not self.health.healthy(dev.ordinal):
                self.keys.drop_device(dev)  # the last partition there lets go of its keys

    def _prove(self, item: WorkItem, device: Device, state: WorkerState) -> None:
        job = item.job
        handler = self.kinds.handler(job.kind)
        r1cs = handler.r1cs(job.circuit_id)
        witness = item.witness
        maker = plan = None
        extra = witness_bytes = 0

        def cancelled() -> bool:
            return job.finished or not self.health.healthy(device.ordinal)

        if witness.assignment is None:  # made here, from the partition's hint table
            plan = handler.witness_plan(job.circuit_id)
            maker = self._device_plan(
                device,
                job.circuit_id,
                plan,
                cancelled,
            )
            extra = maker.run_bytes(plan)
            # the witness may start on its own share while another partition
            # proves; the rest is taken before proving (KeyStore.reserve_rest)
            witness_bytes = 32 * handler.shape(job.circuit_id)[1]
        lease = self.keys.acquire_device(
            item.lease,
            device,
            cancelled=cancelled,
            extra=extra,
            witness_bytes=witness_bytes,
        )
        if item.job.priority >= Priority.CRITICAL and lease.residency is not None:
            self.keep_for_time_critical(device, lease.residency.partition_device_bytes + extra)
        defer = _shared(self.config, lease, item)
        finish = self._carried(state, item, lease, defer)
        error: BaseException | None = None
        try:
            now = time.monotonic()
            job.stage("srs_load", now - lease.load_ms / 1000, now)
            if job.finished:
                self.release(item)
                return
            t = time.monotonic()
            first = not any(
                tr.gpu_start is not None for i, tr in list(job.trace.items()) if i != item.index
            )
            job.partition_state(item.index, "gpu")
            if first and job.submitted_mono is not None:  # the first proof's latency, in parts
                log.info(
                    "job %s: first partition (%d) on the prover %.2f s after acceptance",
                    job.job_id,
                    item.index,
                    t - job.submitted_mono,
                )
            stages = prover.StageTimes()
            with device.activate():
                if self.faults is not None:
                    self.faults.before_proof(device.ordinal)
                # a key on a device proves with the matrices it holds there (it let
                # go of the host's: KeyStore.acquire_device)
                circuit = r1cs if lease.key.r1cs is not None else None
                made = (
                    witness.assignment
                    if maker is None
                    else DeviceWitness(plan, maker, witness.hints)
                )
                done = prove_partition(
                    lease.key,
                    circuit,
                    made,
                    item.public_inputs,
                    source=handler.source,
                    partition=item.index,
                    scopes=LeaseScopes(self.keys, lease, item.urgent, cancelled),
                    times=stages,
                    defer=defer,
                    beside=None if finish is None else functools.partial(finish.run, lease.key),
                    fork_share=0 if finish is None else lease.residency.fork_share,
                )
                proof = done.proof
            end = time.monotonic()
            dt = end - t
            for name, secs in (stages.seconds | stages.detail).items():
                self.metrics.observe_prover(name, job.kind.label, secs)
        except BaseException as e:
            error = e
            raise
        finally:
            self.keys.release_device(lease)
            # the group carried beside this partition's H MSM, joined: on to the
            # epilogue (a device failure in its passes gives this partition back too)
            self._hand_on(state, finish, error)
        with self._work_lock:
            self.work[device.ordinal].busy_seconds += dt
        job.stage("gpu_compute", t, end)
        if done.deferred is not None:
            self._wait_for_shared(state, Waiting(item, done, None, dt), cancelled)
            return
        log.info(
            "job %s partition %d proved on %s in %.2f s (%s)",
            job.job_id,
            item.index,
            device.label,
            dt,
            ", ".join(f"{k} {v:.3f}" for k, v in (stages.detail | stages.seconds).items()),
        )
        job.partition_state(item.index, "done")
        self.metrics.observe_stage("gpu", job.kind.label, dt)
        item.proof = proof
        item.device = device.ordinal
        self.release(item)  # the witness and host working set are no longer needed
        if not job.finished:
            self.proven.put(item)

    # --- partitions waiting for their shared side passes --------------------------
    def _wait_for_shared(
        self, state: WorkerState, waiting: Waiting, cancelled: Callable[[], bool]
    ) -> None:
        """Hold a deferred partition's compact sets in the host budget and keep it
        with the worker's group (finished first when the budget would refuse
        them while the group holds some)."""
        nbytes = waiting.part.deferred.host_bytes
        what = f"compact scalars {waiting.item.job.job_id}/{waiting.item.index}"
        budget = self.keys.host_budget
        got = budget.try_reserve([(nbytes, what)])
        if got is None and (state.waiting or state.closing):
            self._finish_waiting(state)
        if got is None:
            got = budget.reserve([(nbytes, what)], cancelled=cancelled)
        waiting.hold = got[0]
        state.waiting.append(waiting)  # (its state stays "gpu" until the passes)

    def _carried(
        self, state: WorkerState, item: WorkItem, lease: Any, defer: tuple[str, ...]
    ) -> Finish | None:
        """The worker's full group, its passes to run beside this partition's H
        MSM: where the partition is deferred (no passes of its own on the
        branch), of the group's circuit and priority, and its plan splits the
        MSM room (``fork_share``); before its first pass, the group's
        partitions of finished jobs let go."""
        if not state.closing or not defer or not _joins(state.closing, item):
            return None
        if lease.residency is None or lease.residency.fork_share <= 0:
            return None
        if state.finish is None:
            live = self._live(state.closing)
            state.closing = live
            if not live:
                return None
            state.finish = Finish(live, SharedPasses([w.part for w in live]))
        state.finish.ran = False
        return state.finish

    def _hand_on(self, state: WorkerState, finish: Finish | None, error: Any) -> None:
        """After the partition that carried ``finish`` (joined; ``error`` what its
        own proof raised, if anything): once its passes are all done the
        group's items on to the epilogue; a failed pass fails the group's
        items alone; a device failure of either line gives both back. A
        group with passes left, or whose passes the branch never ran, stays
        the worker's closing group (for the next carrier, or in turn)."""
        if finish is None or not finish.ran:
            return
        lost = error if error is not None and is_device_failure(error) else None
        if lost is None and finish.error is None and not finish.passes.done:
            return
        state.closing, state.finish = [], None
        dev = state.device
        assert dev is not None
        failed = lost or finish.error
        if failed is not None:
            self._group_failed(dev, finish.group, failed)
        else:
            self._group_done(dev, finish.group, finish.passes.times, finish.t, finish.end, True)
        if error is None and finish.error is not None and is_device_failure(finish.error):
            raise finish.error  # the partition's part is given back too

    def _finish_closing(self, state: WorkerState) -> None:
        """The worker's full group, its passes not (or not all) run beside
        partitions: the rest in turn."""
        group, state.closing = state.closing, []
        finish, state.finish = state.finish, None
        if group:
            self._finish_group(state, group, None if finish is None else finish.passes)

    def _finish_waiting(self, state: WorkerState) -> None:
        """The worker's waiting partitions' proofs (its full group's first)."""
        self._finish_closing(state)
        group, state.waiting = state.waiting, []
        self._finish_group(state, group)

    def _live(self, group: list[Waiting]) -> list[Waiting]:
        """The group's partitions whose jobs go on (the others let go)."""
        live = []
        for w in group:
            if w.item.job.finished:
                self._let_go(w)
            else:
                live.append(w)
        return live

    def _finish_group(
        self, state: WorkerState, group: list[Waiting], passes: SharedPasses | None = None
    ) -> None:
        """A group's proofs: their shared side queries in one pass a query
        (within one partition's device lease of the key; ``passes``: those
        begun beside partitions, the rest run here), then each on to the
        epilogue; a failure fails them all (a device failure gives them back,
        to be proved again)."""
        dev = state.device
        assert dev is not None
        live = group if passes is not None else self._live(group)
        if not any(not w.item.job.finished for w in live):
            for w in live:
                self._let_go(w)
            return

        def cancelled() -> bool:
            jobs_done = all(w.item.job.finished for w in live)
            return jobs_done or not self.health.healthy(dev.ordinal)

        first = next(w.item for w in live if not w.item.job.finished)
        times = prover.StageTimes()
        t = time.monotonic()
        state.job_id, state.kind, state.busy_since = (
            first.job.job_id,
            first.job.kind.label,
            time.time(),
        )
        state.partition, state.circuit_id = first.index, first.job.circuit_id
        try:
            lease = self.keys.acquire_device(first.lease, dev, cancelled=cancelled)
            try:
                with dev.activate():
                    scopes = LeaseScopes(self.keys, lease, False, cancelled)
                    if passes is not None:
                        times = passes.times
                    parts = [w.part for w in live]
                    finish_partitions(lease.key, parts, scopes, times, passes)
            finally:
                self.keys.release_device(lease)
        except Exception as e:
            self._group_failed(dev, live, e)
            return
        finally:
            state.job_id = state.kind = state.circuit_id = ""
            state.partition = -1
        end = time.monotonic()
        with self._work_lock:
            self.work[dev.ordinal].busy_seconds += end - t
        self._group_done(dev, live, times, t, end)

    def _group_failed(self, dev: Device, live: list[Waiting], e: BaseException) -> None:
        for w in live:
            if w.item.job.finished and not isinstance(e, Cancelled):
                self._let_go(w)  # its job ended while the passes ran
                continue
            if w.hold is not None:
                w.hold.release()
                w.hold = None
            if isinstance(e, Cancelled) and w.item.job.finished:
                self.release(w.item)
            elif isinstance(e, Cancelled) or is_device_failure(e):
                if isinstance(e, Cancelled):
                    self._give_back(w.item)
                else:
                    self._device_failed(dev, w.item, e)
            else:
                log.warning(
                    "job %s partition %d: shared passes failed: %s",
                    w.item.job.job_id,
                    w.item.index,
                    e,
                )
                self._fail(w.item, f"partition {w.item.index}: proving failed: {describe(e)}")

    def _group_done(
        self,
        dev: Device,
        live: list[Waiting],
        times: prover.StageTimes,
        t: float,
        end: float,
        beside: bool = False,
    ) -> None:
        dt = end - t
        first = live[0].item
        for name, secs in (times.seconds | times.detail).items():
            self.metrics.observe_prover(name, first.job.kind.label, secs)
        log.info(
            "%d partitions' shared passes on %s in %.2f s%s (%s)",
            len(live),
            dev.label,
            dt,
            " beside the next partitions' H MSMs" if beside else "",
            ", ".join(f"{k} {v:.3f}" for k, v in (times.detail | times.seconds).items()),
        )
        for w in live:
            item, job = w.item, w.item.job
            if job.finished:
                self._let_go(w)  # its job ended while the passes ran
                continue
            if w.hold is not None:
                w.hold.release()
                w.hold = None
            job.stage("gpu_compute", t, end)
            job.partition_state(item.index, "done")
            self.metrics.observe_stage("gpu", job.kind.label, w.seconds + dt / len(live))
            item.proof = w.part.proof
            item.device = dev.ordinal
            self.release(item)
            if not job.finished:
                self.proven.put(item)

    def _more_coming(self, group: list[Waiting]) -> bool:
        """Whether partitions of a waiting group's circuit are still queued or
        in synthesis, within [scheduler] max_batch_wait_ms of the group's last."""
        last = group[-1]
        if time.monotonic() - last.at > self.config.scheduler.max_batch_wait_ms / 1000:
            return False
        cid = last.item.job.circuit_id
        upstream = [*self.pending.items(), *self.synthesized.items()]
        if any(it.job.circuit_id == cid and not it.job.finished for it in upstream):
            return True
        return any(w.job_id and w.circuit_id == cid for w in self.synthesis_workers())

    def _let_go(self, w: Waiting) -> None:
        if w.hold is not None:
            w.hold.release()
            w.hold = None
        self.release(w.item)

    def _give_back_waiting(self, state: WorkerState) -> None:
        """The device left service: its waiting partitions go back to the queue."""
        group, state.waiting, state.closing = state.closing + state.waiting, [], []
        state.finish = None
        for w in group:
            if w.hold is not None:
                w.hold.release()
                w.hold = None
            self._give_back(w.item)

    def _drop_waiting(self, state: WorkerState) -> None:
        """The worker stops: what its waiting partitions hold is given back."""
        group, state.waiting, state.closing = state.closing + state.waiting, [], []
        state.finish = None
        for w in group:
            self._let_go(w)

    def keep_for_time_critical(self, device: Device, nbytes: int) -> None:
        """With ``[gpus] time_critical_vram = "auto"``: ``device`` keeps at least
        ``nbytes`` (a CRITICAL partition's working set there: a WinningPoSt's;
        a 32GiB WindowPoSt's would take PoRep's room for a second partition)
        for time-critical work."""
        budget = device.budget
        if budget is None or self.config.gpus.time_critical_bytes() is not None:
            return
        if nbytes > budget.kept:
            budget.keep(nbytes)
            log.info(
                "%s keeps %.3f GiB of VRAM for time-critical proofs",
                device.label,
                budget.kept / 2**30,
            )


class LeaseScopes(Scopes):
    """A partition's proof inside its reservations on the lease's device: the
    witness on its own share (or the whole working set), on the witness's
    stream, beside another partition's proof; the proof within the whole set
    (the rest taken first, when the witness ran on its share), on the prover's
    stream (time-critical partitions: the urgent stream for both)."""

    def __init__(self, keys: KeyStore, lease: Any, urgent: bool, cancelled: Callable[[], bool]):
        self.keys, self.lease, self.urgent, self.cancelled = keys, lease, urgent, cancelled

    def mode(self) -> dict[str, Any]:
        return _mode(self.lease)

    @contextlib.contextmanager
    def witness(self) -> Iterator[None]:
        device = self.lease.device
        with _lent(device, self.lease.working), device.stream(self._role("witness")):
            yield

    @contextlib.contextmanager
    def proving(self, times: prover.StageTimes, after_device_witness: bool) -> Iterator[None]:
        lease, device, rest = self.lease, self.lease.device, None
        if after_device_witness:
            t = time.perf_counter()
            rest = self.keys.reserve_rest(lease, cancelled=self.cancelled)  # its own
            if rest is not None:
                times.detail["wait_rest"] = time.perf_counter() - t
        try:
            working = rest if rest is not None else lease.working
            with _lent(device, working), _sized(lease), device.stream(self._role("prove")):
                yield
        finally:
            if rest is not None:
                rest.release()

    def _role(self, step: str) -> str:
        return "urgent" if self.urgent else step


def _mode(lease: Any) -> dict[str, Any]:
    """How the key's residency on the lease's device proves a partition: lean or
    whole, and a whole proof's side-branch share (prover.prove's keywords)."""
    res = lease.residency
    if res is None:
        return {}
    return {"lean": res.lean, "fork_share": res.fork_share}


def _shared(config: Any, lease: Any, item: WorkItem) -> tuple[str, ...]:
    """The side queries a partition leaves for a pass shared with others: the
    residency's ``shared_queries`` (its streamed L, A and B on a lean tier),
    for a job of several partitions that is not time-critical, unless
    ``[gpus] shared_pass_partitions`` is 1."""
    res = lease.residency
    if res is None or config.gpus.shared_pass_partitions == 1 or item.urgent:
        return ()
    if item.job.num_partitions < 2:
        return ()
    return res.shared_queries


def _group_size(config: Any, state: WorkerState) -> int:
    """Parts a group finishes at: the setting, or its first job's partitions."""
    n = config.gpus.shared_pass_partitions
    return n if n > 1 else max(1, state.waiting[0].item.job.num_partitions)


def _closes(waiting: list, item: WorkItem) -> bool:
    """Whether a partition taken next closes a waiting group first: work of
    another circuit or priority, unless time-critical (which goes first)."""
    return not item.urgent and not _joins(waiting, item)


def _joins(waiting: list, item: WorkItem) -> bool:
    """Whether a partition may follow a waiting group before its passes: same
    circuit and priority (the same key; nothing of another priority waits on
    the group)."""
    head = waiting[0].item
    return item.job.circuit_id == head.job.circuit_id and item.job.priority == head.job.priority


def _sized(lease: Any) -> Any:
    """A lean partition's MSMs size their work to the room its estimate gave them:
    the rest of its reservation is held by its live vectors, which the free
    memory the backend sees does not show."""
    res, budget = lease.residency, lease.device.budget
    if res is None or not res.lean or budget is None:
        return contextlib.nullcontext()
    return budget.sized_within(res.msm_room)


def _lent(device: Device, res: Any) -> Any:
    """The backend's temporaries drawn from ``res`` (a device reservation), if any."""
    if res is None or device.budget is None:
        return contextlib.nullcontext()
    return device.budget.lend(res)
