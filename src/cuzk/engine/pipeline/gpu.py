"""The GPU workers: each takes a batch of partitions from the GPU queue (the
scheduling rule of :mod:`.queues`), pins the key on its device with the
partition's working set, and proves each through
:func:`cuzk.engine.prove.prove_partition`, inside the partition's
reservations (:class:`LeaseScopes`). A device failure hands the partition to
:mod:`.failover`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from cuzk.engine.budget import Cancelled, time_critical
from cuzk.engine.devices import Device
from cuzk.engine.health import is_device_failure
from cuzk.engine.jobs import Priority
from cuzk.engine.keystore import KeyStore
from cuzk.engine.pipeline.queues import PipelineBase, WorkerState, describe
from cuzk.engine.prove import DeviceWitness, Scopes, prove_partition
from cuzk.engine.scheduler import Closed, WorkItem
from cuzk.groth16 import prover

log = logging.getLogger(__name__)


class GpuWorkers(PipelineBase):
    """The GPU stage of :class:`cuzk.engine.pipeline.Pipeline`."""

    def _gpu_loop(self, state: WorkerState) -> None:
        dev = state.device
        assert dev is not None

        def claim(batch: list[WorkItem]) -> None:
            state.held = len(batch)

        while True:
            if self._stopping.is_set():
                raise Closed("gpu")
            if not self.health.healthy(dev.ordinal):
                self._recover(dev)
                continue
            batch = self.synthesized.get_batch(
                self.config.scheduler.max_batch_size,
                timeout=1.0,
                select=self._selector(dev, state.urgent),
                claim=claim,
            )
            for n, item in enumerate(batch):
                if not self.health.healthy(dev.ordinal) or (
                    n and self.synthesized.outranks(item.job.priority)
                ):
                    # the device failed in the middle of the batch, or work of a
                    # higher priority is queued: the rest go back (keeping their place)
                    for rest in batch[n:]:
                        self._give_back(rest)
                    break
                try:
                    with time_critical(item.urgent):
                        self._gpu_one(state, item)
                finally:
                    state.held -= 1
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
            self._prove(item, dev)
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

    def _prove(self, item: WorkItem, device: Device) -> None:
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
                proof = prove_partition(
                    lease.key,
                    circuit,
                    made,
                    item.public_inputs,
                    source=handler.source,
                    partition=item.index,
                    scopes=LeaseScopes(self.keys, lease, item.urgent, cancelled),
                    times=stages,
                ).proof
            end = time.monotonic()
            dt = end - t
            for name, secs in (stages.seconds | stages.detail).items():
                self.metrics.observe_prover(name, job.kind.label, secs)
        finally:
            self.keys.release_device(lease)
        with self._work_lock:
            self.work[device.ordinal].busy_seconds += dt
        job.stage("gpu_compute", t, end)
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
