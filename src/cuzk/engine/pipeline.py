"""The partition pipeline: synthesis workers → bounded queue → GPU workers → epilogue.

- Synthesis workers take the highest-priority partition, pin its key and
  reserve its host working set (waiting for memory, never over-committing),
  and synthesize its witness (in their thread, or, with ``synthesis_processes``,
  in a pool of worker processes: :mod:`cuzk.engine.synthpool`).
- The synthesized partitions wait in a bounded queue (``synthesis_lookahead``)
  so that synthesis runs ahead of the GPUs by a fixed amount of memory.
- ``gpu_workers_per_device`` workers per device take them (highest priority
  first, up to ``max_batch_size`` consecutive partitions of one circuit,
  shared out among the healthy devices), reserve the device's share, and
  prove. Which device takes which partition is :mod:`cuzk.engine.placement`'s
  rule: the partitions of one job spread over the devices that hold its key.
- A device failure (:mod:`cuzk.engine.health`) gives the partition back to
  the queue for another device (a partition is tried once on each device;
  the job fails only when every device has failed it), and takes the device
  out of service until a probe passes. Nothing is lost and nothing is proven
  twice: a partition's proof is made by exactly one device.
- Epilogue workers verify each partition proof against the key's verifying
  key; a job completes only when all its partitions are proven and verified.
- Time-critical partitions (HIGH and CRITICAL: WinningPoSt, WindowPoSt) go
  ahead of the rest everywhere: every queue takes them first, a worker proving
  a batch gives its rest back when one is queued, and one synthesis worker
  (with a process of its own in the pool) and one GPU worker per device take
  only them, so they never wait for a PoRep partition to finish. On a GPU they
  run on a stream of the highest priority (PoRep's prover runs just below it)
  and reserve from a VRAM slice that other work may not take (``[gpus]
  time_critical_vram``, :meth:`Budget.keep`); their keys are evicted only for
  time-critical work (:meth:`KeyStore.evict_idle`).

A job that is cancelled or has failed is dropped at the next partition
boundary: each stage checks before it starts, and releases what the
partition held.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.engine.budget import Cancelled, time_critical
from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.faults import FailureInjection
from cuzk.engine.health import DeviceHealth, is_device_failure
from cuzk.engine.jobs import Job, Priority
from cuzk.engine.keystore import KeyStore
from cuzk.engine.kinds import KindRegistry
from cuzk.engine.kinds.base import PartitionInput, ProofKindHandler
from cuzk.engine.metrics import EngineMetrics
from cuzk.engine.placement import DeviceLoad, may_take
from cuzk.engine.scheduler import Closed, PartitionQueue, WorkItem
from cuzk.engine.synthpool import SynthesisPool
from cuzk.errors import InputError
from cuzk.groth16 import prover, verifier
from cuzk.groth16.proof import Proof
from cuzk.synthesis.static_plan import StaticPlan

log = logging.getLogger(__name__)


@dataclass
class WorkerState:
    name: str
    device: Device | None = None
    job_id: str = ""
    kind: str = ""
    busy_since: float = 0.0
    partition: int = -1  # the partition of job_id it works on
    circuit_id: str = ""  # of that partition (synthesis workers: placement counts them)
    held: int = 0  # GPU workers: partitions taken from the queue and not finished
    urgent: bool = False  # takes time-critical partitions only


@dataclass
class DeviceWork:
    """What one device has done since the daemon started."""

    proven: int = 0  # partitions it proved that verified
    busy_seconds: float = 0.0  # time its workers spent proving


@dataclass
class PipelineHooks:
    started: Callable[[Job], None]  # a job's first partition entered synthesis
    partition_done: Callable[[Job, WorkItem], None]  # a verified partition proof
    failed: Callable[[Job, str], None]


@dataclass
class Pipeline:
    config: Config
    kinds: KindRegistry
    keys: KeyStore
    devices: list[Device]
    metrics: EngineMetrics
    hooks: PipelineHooks
    pending: PartitionQueue = field(init=False)
    synthesized: PartitionQueue = field(init=False)
    proven: PartitionQueue = field(init=False)
    workers: list[WorkerState] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    synth_pool: SynthesisPool | None = None
    health: DeviceHealth = field(init=False)
    faults: FailureInjection | None = None  # the test hook (CUZK_FAIL_DEVICE)
    work: dict[int, DeviceWork] = field(init=False)

    def __post_init__(self) -> None:
        p = self.config.pipeline
        self.pending = PartitionQueue("synthesis")
        # synthesis_lookahead partitions ready per device, so that none waits on another's
        lookahead = max(1, p.synthesis_lookahead) * max(1, len(self.devices))
        self.synthesized = PartitionQueue("gpu", capacity=lookahead)
        self.proven = PartitionQueue("epilogue")
        ordinals = [d.ordinal for d in self.devices]
        self.health = DeviceHealth(
            ordinals, self.config.gpus.recovery_probe_interval, on_change=self.synthesized.poke
        )
        if self.faults is None:
            self.faults = FailureInjection.from_environment(ordinals)
        self.work = {o: DeviceWork() for o in ordinals}
        self._work_lock = threading.Lock()
        # (device ordinal, circuit id) -> the static witness plan there and its reservation
        self._device_plans: dict[tuple[int, str], tuple[StaticPlan, Any, list]] = {}
        self._plans_lock = threading.Lock()  # guards _device_plans
        self._device_locks: dict[int, threading.Lock] = {}  # one plan upload per device
        self._stopping = threading.Event()
        kept = self.config.gpus.time_critical_bytes()
        for d in self.devices:
            if d.budget is not None and kept is not None:
                d.budget.keep(kept)

    # --- lifecycle ----------------------------------------------------------
    def start(self) -> None:
        p = self.config.pipeline
        n_synth = max(1, min(p.synthesis_concurrency, p.parallel_synthesis_limit()))
        procs = p.processes_for(any(d.backend.name == "cuda" for d in self.devices))
        if procs:
            # one process more than the workers that wait on the pool: the
            # time-critical worker's partition never queues behind PoRep's
            self.synth_pool = SynthesisPool(procs + 1)
            n_synth = max(n_synth, procs)  # a thread waits on each process
        for i in range(n_synth):
            self._spawn(f"synth-{i}", self._synthesis_loop, None)
        self._spawn("synth-urgent", self._synthesis_loop, None, urgent=True)
        for dev in self.devices:
            for w in range(self.config.gpus.gpu_workers_per_device):
                self._spawn(f"gpu-{dev.label}-{w}", self._gpu_loop, dev)
            self._spawn(f"gpu-{dev.label}-urgent", self._gpu_loop, dev, urgent=True)
        for i in range(p.epilogue_workers):
            self._spawn(f"epilogue-{i}", self._epilogue_loop, None)

    def _spawn(
        self,
        name: str,
        target: Callable[[WorkerState], None],
        dev: Device | None,
        urgent: bool = False,
    ) -> None:
        state = WorkerState(name, dev, urgent=urgent)
        self.workers.append(state)
        t = threading.Thread(target=self._guard, args=(target, state), name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _guard(self, target: Callable[[WorkerState], None], state: WorkerState) -> None:
        try:
            target(state)
        except Closed:
            pass
        except Exception:  # a worker must never die silently
            log.exception("worker %s stopped by an unexpected error", state.name)

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        for q in (self.pending, self.synthesized, self.proven):
            q.close()
        end = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
        if self.synth_pool is not None:
            self.synth_pool.close()

    # --- helpers ------------------------------------------------------------
    def release(self, item: WorkItem) -> None:
        """Give back what a dropped partition held."""
        if item.lease is not None:
            self.keys.release_host(item.lease)
            item.lease = None
        item.witness = None

    def drop_job(self, job_id: str) -> int:
        """Remove a job's queued partitions from every stage; returns how many."""
        n = 0
        for q in (self.pending, self.synthesized, self.proven):
            for item in q.remove_job(job_id):
                self.release(item)
                n += 1
        return n

    def synthesis_workers(self) -> list[WorkerState]:
        return [w for w in self.workers if w.name.startswith("synth-")]

    def stage_depths(self) -> dict[str, int]:
        return {
            "synthesis": len(self.pending),
            "gpu": len(self.synthesized),
            "epilogue": len(self.proven),
        }

    def _fail(self, item: WorkItem, reason: str) -> None:
        self.release(item)
        item.job.partition_state(item.index, "failed")
        self.hooks.failed(item.job, reason)

    # --- stages ---------------------------------------------------------------
    def _synthesis_loop(self, state: WorkerState) -> None:
        while True:
            if state.urgent:  # the first time-critical partition queued, if any
                got = self.pending.get_batch(1, timeout=1.0, select=_first_urgent)
                item = got[0] if got else None
            else:
                item = self.pending.get()
            if item is None:
                continue
            job = item.job
            if job.finished:
                continue
            state.job_id, state.kind, state.busy_since = job.job_id, job.kind.label, time.time()
            state.partition, state.circuit_id = item.index, job.circuit_id
            try:
                with time_critical(item.urgent):
                    self._synthesize(item)
            except Cancelled:
                self.release(item)
            except Exception as e:
                log.warning("job %s partition %d: synthesis failed: %s", job.job_id, item.index, e)
                self._fail(item, f"partition {item.index}: {_describe(e)}")
            finally:
                state.job_id = state.kind = state.circuit_id = ""
                state.partition = -1

    def _prover_host_bytes(self, num_constraints: int, num_variables: int) -> int:
        """Host bytes a proof holds on whichever device takes it (the largest model)."""
        return max(d.host_prover_bytes(num_constraints, num_variables) for d in self.devices)

    def _synthesize(self, item: WorkItem) -> None:
        job = item.job
        kind = job.kind.label
        self.metrics.observe_stage("queue", kind, time.monotonic() - item.enqueued_at)
        self.hooks.started(job)
        handler = self.kinds.handler(job.kind)
        self.keys.ensure_r1cs(job.circuit_id, cancelled=lambda: job.finished)
        on_device = self.witness_on_device(handler)
        if on_device:  # the host holds the hints; the assignment is made on the GPU
            working = handler.hints_bytes(job.circuit_id)
        else:
            working = handler.working_bytes(job.circuit_id, self._prover_host_bytes)
        item.lease = self.keys.acquire_host(job.circuit_id, working, cancelled=lambda: job.finished)
        now = time.monotonic()
        job.stage("srs_load", now - item.lease.load_ms / 1000, now)
        self.metrics.observe_stage("srs_load", kind, item.lease.load_ms / 1000)
        if job.finished:
            self.release(item)
            return
        t = time.monotonic()
        job.partition_state(item.index, "synthesizing")
        part = PartitionInput(item.index, item.data)
        if on_device:
            if self.synth_pool is not None:
                witness = self.synth_pool.witness_hints(handler, job.circuit_id, part)
            else:
                witness = handler.witness_hints(job.circuit_id, part)
        elif self.synth_pool is not None:
            witness = self.synth_pool.synthesize(handler, job.circuit_id, part)
        else:
            witness = handler.synthesize(job.circuit_id, part)
        end = time.monotonic()
        dt = end - t
        job.stage("synthesis", t, end)
        self.metrics.observe_stage("synthesis", kind, dt)
        item.witness = witness
        item.public_inputs = witness.public_inputs
        job.partition_state(item.index, "synth_done")
        if job.finished:
            self.release(item)
            return
        self.synthesized.put(item)

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
                self._fail(item, f"partition {item.index}: proving failed: {_describe(e)}")
        finally:
            state.job_id = state.kind = state.circuit_id = ""
            state.partition = -1
            if not self.health.healthy(dev.ordinal):
                self.keys.drop_device(dev)  # the last partition there lets go of its keys

    def witness_on_device(self, handler: ProofKindHandler) -> bool:
        """Whether this kind's partitions get their assignment on the device that
        proves them (``[pipeline] witness``)."""
        mode = self.config.pipeline.witness
        if mode == "host" or not handler.device_witness:
            return False
        return mode == "device" or all(d.backend.name == "cuda" for d in self.devices)

    def _device_plan(
        self, device: Device, circuit_id: str, plan: StaticPlan, cancelled: Callable[[], bool]
    ) -> Any:
        """``device``'s witness maker with ``plan`` uploaded there, under a
        reservation of its own held until the device is dropped (waiting for
        room as a key does: idle keys are evicted first)."""
        key = (device.ordinal, circuit_id)
        maker = device.witness_device()
        with self._plans_lock:
            lock = self._device_locks.setdefault(device.ordinal, threading.Lock())
        with lock:  # one upload at a time per device; other devices go on
            if key in self._device_plans:  # (a circuit's plan is one object per process)
                return maker
            res = None
            if device.budget is not None:
                (res,) = device.budget.reserve(
                    [(plan.device_bytes(), f"witness plan {circuit_id}")],
                    evict=lambda n: self.keys.evict_idle(n, device),
                    cancelled=cancelled,
                )
            holds = getattr(maker, "holds", [])
            before = len(holds)
            try:
                lent = device.budget.lend(res) if res is not None else contextlib.nullcontext()
                with device.activate(), lent:
                    plan.prepare(maker)
            except BaseException:
                _forget(plan, maker, holds[before:], res)
                raise
            with self._plans_lock:  # the plan's arrays' holds go with it
                self._device_plans[key] = (plan, res, holds[before:])
        return maker

    def _drop_plan(self, device: Device, key: tuple[int, str]) -> None:
        with self._plans_lock:
            got = self._device_plans.pop(key, None)
        if got is None:
            return
        plan, res, holds = got
        _forget(plan, device.witness_device(), holds, res)

    def drop_plans(self, device: Device) -> None:
        """Give back the witness plans uploaded to ``device`` (it failed)."""
        with self._plans_lock:
            keys = [k for k in self._device_plans if k[0] == device.ordinal]
        for key in keys:
            self._drop_plan(device, key)

    def _prove(self, item: WorkItem, device: Device) -> None:
        job = item.job
        handler = self.kinds.handler(job.kind)
        r1cs = handler.r1cs(job.circuit_id)
        witness = item.witness
        maker = plan = None
        extra = witness_bytes = 0
        if witness.assignment is None:  # made here, from the partition's hint table
            plan = handler.witness_plan(job.circuit_id)
            maker = self._device_plan(
                device,
                job.circuit_id,
                plan,
                lambda: job.finished or not self.health.healthy(device.ordinal),
            )
            extra = maker.run_bytes(plan)
            # the witness may start on its own share while another partition
            # proves; the rest is taken before proving (KeyStore.reserve_rest)
            witness_bytes = 32 * handler.shape(job.circuit_id)[1]
        lease = self.keys.acquire_device(
            item.lease,
            device,
            cancelled=lambda: job.finished or not self.health.healthy(device.ordinal),
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
            job.partition_state(item.index, "gpu")
            stages = prover.StageTimes()
            with device.activate():
                if self.faults is not None:
                    self.faults.before_proof(device.ordinal)
                # a key on a device proves with the matrices it holds there (it let
                # go of the host's: KeyStore.acquire_device)
                circuit = r1cs if lease.key.r1cs is not None else None
                if maker is None:
                    role = "urgent" if item.urgent else "prove"
                    with _lent(device, lease.working), _sized(lease), device.stream(role):
                        proof = prover.prove(
                            lease.key, circuit, witness.assignment, times=stages, **_mode(lease)
                        )
                else:
                    proof = self._prove_device_witness(
                        item, handler, plan, maker, lease, circuit, stages
                    )
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

    def _prove_device_witness(
        self,
        item: WorkItem,
        handler: ProofKindHandler,
        plan: StaticPlan,
        maker: Any,
        lease: Any,
        circuit: Any,
        stages: prover.StageTimes,
    ) -> Proof:
        """The partition's assignment made on the device from its hint table, its
        inputs checked against the ones the proof is verified with, the proof
        (with the rest of the partition's working set, when the witness ran on
        its own share of it)."""
        key, job, device = lease.key, item.job, lease.device
        t = time.perf_counter()
        # the witness's share (or the whole set), on the witness's stream: it
        # runs beside another partition's proof, which keeps the device first
        role = "urgent" if item.urgent else "witness"
        with _lent(device, lease.working), device.stream(role):
            W = plan.run_table(maker, item.witness.hints)
        try:
            inputs = list(item.public_inputs)
            with device.stream(role):
                got = key.backend.to_host(W[1 : 1 + len(inputs)])
            stages.detail["witness"] = time.perf_counter() - t  # synchronised by the copy
            if not np.array_equal(got, fr_to_array(inputs)):
                raise InputError(
                    handler.source,
                    f"partition {item.index}",
                    "its vanilla proofs do not answer the request's public inputs "
                    "(challenges, commitments)",
                )
            t = time.perf_counter()
            rest = self.keys.reserve_rest(  # outside any lent reservation: its own
                lease,
                cancelled=lambda: job.finished or not self.health.healthy(device.ordinal),
            )
            if rest is not None:
                stages.detail["wait_rest"] = time.perf_counter() - t
            try:
                working = rest if rest is not None else lease.working
                role = "urgent" if item.urgent else "prove"
                with _lent(device, working), _sized(lease), device.stream(role):
                    return prover.prove(key, circuit, W, times=stages, **_mode(lease))
            finally:
                if rest is not None:
                    rest.release()
        finally:
            maker.free(W)

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

    # --- placement and failover -------------------------------------------------------
    def device_loads(self, urgent: bool = False) -> dict[int, DeviceLoad]:
        """Every device as placement sees it now (for a time-critical partition,
        ``urgent``, with the workers kept for such work; else without them)."""
        placed = self.keys.placed_by_device()
        health = self.health.snapshot()
        out = {}
        for d in self.devices:
            ws = [w for w in self.workers if w.device is d and (urgent or not w.urgent)]
            free = d.budget.free if d.budget is not None else self.keys.host_budget.free
            out[d.ordinal] = DeviceLoad(
                ordinal=d.ordinal,
                healthy=health[d.ordinal].healthy,
                workers=len(ws),
                held=sum(w.held for w in ws),
                free_workers=sum(1 for w in ws if w.held == 0),
                free_bytes=free,
                keys=placed.get(d.ordinal, frozenset()),
            )
        return out

    def _waiting(self, queued: list[WorkItem]) -> dict[str, int]:
        """Partitions per circuit not on a device yet: queued for a GPU (``queued``),
        being synthesized, or queued for synthesis."""
        counts: dict[str, int] = {}
        synthesizing = [w.circuit_id for w in self.synthesis_workers() if w.circuit_id]
        for cid in [it.job.circuit_id for it in queued + self.pending.items()] + synthesizing:
            counts[cid] = counts.get(cid, 0) + 1
        return counts

    def _selector(self, dev: Device, urgent: bool = False) -> Callable[[list[WorkItem]], list[int]]:
        """What a free worker of ``dev`` takes from the queue (placement's rule): the
        first partition it may take, with up to ``max_batch_size`` − 1 more of its
        circuit and priority, the batch shared out among the healthy devices. A
        worker kept for time-critical work (``urgent``) takes only that."""
        max_batch = self.config.scheduler.max_batch_size

        def select(items: list[WorkItem]) -> list[int]:
            if urgent and not (items and items[0].urgent):
                return []  # (time-critical items are queued first)
            loads = self.device_loads(urgent=bool(items) and items[0].urgent)
            me = loads[dev.ordinal]
            if not me.healthy:
                return []
            every = list(loads.values())
            waiting = self._waiting(items)
            for i, it in enumerate(items):
                if urgent and not it.urgent:
                    break
                cid = it.job.circuit_id
                if not may_take(me, every, cid, waiting.get(cid, 0), it.failed_on):
                    continue
                cap = max(1, max_batch // max(1, sum(1 for d in every if d.healthy)))
                same = [
                    j
                    for j in range(i, len(items))
                    if items[j].job.circuit_id == cid
                    and items[j].job.priority == it.job.priority
                    and dev.ordinal not in items[j].failed_on
                ]
                return same[:cap]
            return []

        return select

    def _give_back(self, item: WorkItem) -> None:
        """A partition taken by a device that cannot prove it now goes back to the
        queue, past its capacity (it already held its place), for another device."""
        if item.job.finished:
            self.release(item)
            return
        item.job.partition_state(item.index, "synth_done")
        try:
            self.synthesized.put(item, block=False)
        except Closed:
            self.release(item)

    def _device_failed(self, dev: Device, item: WorkItem, e: BaseException) -> None:
        """``dev`` failed proving ``item``: the device goes out of service and the
        partition to another device, or its job fails when every device has failed it."""
        reason = _describe(e)
        if self.health.failed(dev.ordinal, reason):
            log.error(
                "%s failed: %s; it takes no work until a probe passes (first in %.0f s)",
                dev.label,
                reason,
                self.health.probe_interval,
            )
        self.keys.drop_device(dev)
        self.drop_plans(dev)
        job = item.job
        item.failed_on.add(dev.ordinal)
        item.failures.append(f"{dev.label}: {reason}")
        if job.finished:
            self.release(item)
            return
        if all(d.ordinal in item.failed_on for d in self.devices):
            self._fail(
                item,
                f"partition {item.index}: proving failed on every device "
                f"({'; '.join(item.failures)})",
            )
            return
        self.health.failed_over(dev.ordinal)
        log.warning(
            "job %s partition %d: %s failed (%s); the partition goes to another device",
            job.job_id,
            item.index,
            dev.label,
            reason,
        )
        self._give_back(item)

    def _recover(self, dev: Device) -> None:
        """A worker of an unhealthy device: probe it when its probe is due (one
        worker does), otherwise wait a little."""
        wait = self.health.seconds_to_probe(dev.ordinal)
        if wait is None:  # healthy again
            return
        if wait > 0 or not self.health.claim_probe(dev.ordinal):
            self._stopping.wait(min(max(wait, 0.05), 1.0))
            return
        try:
            if self.faults is not None:
                self.faults.before_probe(dev.ordinal)
            self.keys.drop_device(dev)  # what partitions in flight at the failure left there
            dev.probe()
        except Exception as e:
            self.health.probe_failed(dev.ordinal, _describe(e))
            log.warning(
                "%s: its probe failed (%s); the next in %.0f s",
                dev.label,
                _describe(e),
                self.health.probe_interval,
            )
            self._fail_stranded()
            return
        self.health.probe_passed(dev.ordinal)
        log.warning("%s passed its probe and takes work again", dev.label)

    def _fail_stranded(self) -> None:
        """After a failed probe: the queued partitions that no device in service may
        prove (every one has failed them already, or none is in service) fail their
        jobs now, rather than wait for devices that may never recover; a partition
        waits at most a probe interval for a device to come back."""
        health = self.health.snapshot()
        in_service = {o for o, r in health.items() if r.healthy}
        stranded = self.synthesized.take_where(lambda it: not in_service - it.failed_on)
        for item in stranded:
            if item.job.finished:
                self.release(item)
                continue
            out = "; ".join(
                f"GPU {o}: {r.last_failure}"
                for o, r in sorted(health.items())
                if not r.healthy and o not in item.failed_on
            )
            if in_service:
                why = f"every device in service has failed it ({'; '.join(item.failures)})"
                why += f" and the others are out of service ({out})" if out else ""
            else:
                why = f"every device is out of service ({out or '; '.join(item.failures)})"
            self._fail(item, f"partition {item.index}: {why}")

    def device_work(self) -> dict[int, DeviceWork]:
        with self._work_lock:
            return {o: DeviceWork(w.proven, w.busy_seconds) for o, w in self.work.items()}

    def _epilogue_loop(self, state: WorkerState) -> None:
        while True:
            item = self.proven.get()
            if item is None:
                continue
            job = item.job
            if job.finished:
                continue
            state.job_id, state.kind = job.job_id, job.kind.label
            try:
                t = time.monotonic()
                vk = self.keys.verifying_key(job.circuit_id)
                proof: Proof = item.proof
                ok = verifier.verify(vk, list(item.public_inputs), proof)
                end = time.monotonic()
                dt = end - t
                job.stage("verify", t, end)
                self.metrics.observe_stage("verify", job.kind.label, dt)
                if not ok:
                    # Never returned: a proof that does not verify is a bug or a bad key.
                    log.error("job %s partition %d: proof did not verify", job.job_id, item.index)
                    job.partition_state(item.index, "failed")
                    self.hooks.failed(
                        job, f"partition {item.index}: the proof did not verify (not returned)"
                    )
                    continue
                self.metrics.partitions.labels(job.kind.label).inc()
                if item.device is not None:
                    with self._work_lock:
                        self.work[item.device].proven += 1
                self.hooks.partition_done(job, item)
            except Exception as e:
                log.warning("job %s: epilogue failed: %s", job.job_id, e)
                job.partition_state(item.index, "failed")
                self.hooks.failed(
                    job, f"partition {item.index}: verification failed: {_describe(e)}"
                )
            finally:
                state.job_id = state.kind = ""


def _first_urgent(items: list[WorkItem]) -> list[int]:
    """The first time-critical item (they are queued first), if any."""
    return [0] if items and items[0].urgent else []


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


def _forget(plan: StaticPlan, maker: Any, holds: list, res: Any) -> None:
    """A plan's arrays dropped from a device: their budget holds released (the
    maker keeps the holds of its other plans), then the plan's reservation."""
    plan.forget(maker)
    for h in holds:
        h.release()
    mine = {id(h) for h in holds}
    if hasattr(maker, "holds"):
        maker.holds = [h for h in maker.holds if id(h) not in mine]
    if res is not None:
        res.release()


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text if type(e).__module__.startswith("cuzk") else f"{type(e).__name__}: {text}"
