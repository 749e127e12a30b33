"""The pipeline's queues and its workers' records: the three partition
queues between the stages (synthesis, GPU, epilogue), the workers' threads
(started, guarded, stopped), what a dropped partition gives back, and the
scheduling rule by which a GPU worker takes partitions from its queue
(:mod:`cuzk.engine.placement` on the devices as they are now).

:class:`PipelineBase` holds the state every stage shares; the stages
(:mod:`.synthesis`, :mod:`.gpu`, :mod:`.epilogue`), the device witness plans
(:mod:`.witness_plans`) and failover (:mod:`.failover`) are its subclasses,
and :class:`cuzk.engine.pipeline.Pipeline` joins them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.faults import FailureInjection
from cuzk.engine.health import DeviceHealth
from cuzk.engine.jobs import Job
from cuzk.engine.keystore import KeyStore
from cuzk.engine.kinds import KindRegistry
from cuzk.engine.metrics import EngineMetrics
from cuzk.engine.placement import DeviceLoad, may_take
from cuzk.engine.scheduler import Closed, PartitionQueue, WorkItem
from cuzk.engine.synthpool import SynthesisPool
from cuzk.synthesis.static_plan import StaticPlan

log = logging.getLogger(__name__)


@dataclass
class WorkerState:
    """One worker thread and what it works on now (status and placement read it)."""

    name: str
    device: Device | None = None
    job_id: str = ""
    kind: str = ""
    busy_since: float = 0.0
    partition: int = -1  # the partition of job_id it works on
    circuit_id: str = ""  # of that partition (synthesis workers: placement counts them)
    held: int = 0  # GPU workers: partitions taken from the queue and not finished
    urgent: bool = False  # takes time-critical partitions only
    # GPU workers: partitions proved but for their shared L, A and B passes
    # (pipeline.gpu.Waiting), finished together
    waiting: list = field(default_factory=list)
    # GPU workers: a full group whose passes wait to run beside the next
    # partition's H MSM (at most one a worker)
    closing: list = field(default_factory=list)
    finish: Any = None  # the closing group's passes, begun beside earlier partitions


@dataclass
class DeviceWork:
    """What one device has done since the daemon started."""

    proven: int = 0  # partitions it proved that verified
    busy_seconds: float = 0.0  # time its workers spent proving


@dataclass
class PipelineHooks:
    """How the pipeline reports to the engine."""

    started: Callable[[Job], None]  # a job's first partition entered synthesis
    partition_done: Callable[[Job, WorkItem], None]  # a verified partition proof
    failed: Callable[[Job, str], None]


@dataclass
class PipelineBase:
    """What every stage of the pipeline shares: its queues, workers, device
    health and work counts, and the helpers that drop or fail a partition."""

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
        self._warming: set[str] = set()  # circuits whose plan loads ahead (WitnessPlans)
        self._stopping = threading.Event()
        kept = self.config.gpus.time_critical_bytes()
        for d in self.devices:
            if d.budget is not None and kept is not None:
                d.budget.keep(kept)

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

    # --- scheduling: what a GPU worker takes -----------------------------------------
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

    def device_work(self) -> dict[int, DeviceWork]:
        with self._work_lock:
            return {o: DeviceWork(w.proven, w.busy_seconds) for o, w in self.work.items()}


def first_urgent(items: list[WorkItem]) -> list[int]:
    """The first time-critical item (they are queued first), if any."""
    return [0] if items and items[0].urgent else []


def describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text if type(e).__module__.startswith("cuzk") else f"{type(e).__name__}: {text}"
