"""The partition pipeline: synthesis workers → bounded queue → GPU workers → epilogue.

- Synthesis workers take the highest-priority partition, pin its key and
  reserve its host working set (waiting for memory, never over-committing),
  and synthesize its witness (in their thread, or, with ``synthesis_processes``,
  in a pool of worker processes: :mod:`cuzk.engine.synthpool`).
- The synthesized partitions wait in a bounded queue (``synthesis_lookahead``)
  so that synthesis runs ahead of the GPUs by a fixed amount of memory.
- ``gpu_workers_per_device`` workers per device take them (highest priority
  first, up to ``max_batch_size`` consecutive partitions of one circuit),
  reserve the device's share, and prove.
- Epilogue workers verify each partition proof against the key's verifying
  key; a job completes only when all its partitions are proven and verified.

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

from cuzk.engine.budget import Cancelled
from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.jobs import Job
from cuzk.engine.kinds import KindRegistry
from cuzk.engine.kinds.base import PartitionInput
from cuzk.engine.metrics import EngineMetrics
from cuzk.engine.scheduler import Closed, PartitionQueue, WorkItem
from cuzk.engine.srs import SrsManager
from cuzk.engine.synthpool import SynthesisPool
from cuzk.groth16 import prover, verifier
from cuzk.groth16.proof import Proof

log = logging.getLogger(__name__)


@dataclass
class WorkerState:
    name: str
    device: Device | None = None
    job_id: str = ""
    kind: str = ""
    busy_since: float = 0.0
    partition: int = -1  # the partition of job_id it works on


@dataclass
class PipelineHooks:
    started: Callable[[Job], None]  # a job's first partition entered synthesis
    partition_done: Callable[[Job, WorkItem], None]  # a verified partition proof
    failed: Callable[[Job, str], None]


@dataclass
class Pipeline:
    config: Config
    kinds: KindRegistry
    srs: SrsManager
    devices: list[Device]
    metrics: EngineMetrics
    hooks: PipelineHooks
    pending: PartitionQueue = field(init=False)
    synthesized: PartitionQueue = field(init=False)
    proven: PartitionQueue = field(init=False)
    workers: list[WorkerState] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    synth_pool: SynthesisPool | None = None

    def __post_init__(self) -> None:
        p = self.config.pipeline
        self.pending = PartitionQueue("synthesis")
        self.synthesized = PartitionQueue("gpu", capacity=max(1, p.synthesis_lookahead))
        self.proven = PartitionQueue("epilogue")

    # --- lifecycle ----------------------------------------------------------
    def start(self) -> None:
        p = self.config.pipeline
        n_synth = max(1, min(p.synthesis_concurrency, p.parallel_synthesis_limit()))
        if p.synthesis_processes:
            self.synth_pool = SynthesisPool(p.synthesis_processes)
            n_synth = max(n_synth, p.synthesis_processes)  # a thread waits on each process
        for i in range(n_synth):
            self._spawn(f"synth-{i}", self._synthesis_loop, None)
        for dev in self.devices:
            for w in range(self.config.gpus.gpu_workers_per_device):
                self._spawn(f"gpu-{dev.label}-{w}", self._gpu_loop, dev)
        for i in range(p.epilogue_workers):
            self._spawn(f"epilogue-{i}", self._epilogue_loop, None)

    def _spawn(self, name: str, target: Callable[[WorkerState], None], dev: Device | None) -> None:
        state = WorkerState(name, dev)
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
            self.srs.release_host(item.lease)
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
            item = self.pending.get()
            if item is None:
                continue
            job = item.job
            if job.finished:
                continue
            state.job_id, state.kind, state.busy_since = job.job_id, job.kind.label, time.time()
            state.partition = item.index
            try:
                self._synthesize(item)
            except Cancelled:
                self.release(item)
            except Exception as e:
                log.warning("job %s partition %d: synthesis failed: %s", job.job_id, item.index, e)
                self._fail(item, f"partition {item.index}: {_describe(e)}")
            finally:
                state.job_id = state.kind = ""
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
        self.srs.ensure_r1cs(job.circuit_id, cancelled=lambda: job.finished)
        working = handler.working_bytes(job.circuit_id, self._prover_host_bytes)
        item.lease = self.srs.acquire_host(job.circuit_id, working, cancelled=lambda: job.finished)
        now = time.monotonic()
        job.stage("srs_load", now - item.lease.load_ms / 1000, now)
        self.metrics.observe_stage("srs_load", kind, item.lease.load_ms / 1000)
        if job.finished:
            self.release(item)
            return
        t = time.monotonic()
        job.partition_state(item.index, "synthesizing")
        part = PartitionInput(item.index, item.data)
        if self.synth_pool is not None:
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
        assert state.device is not None
        max_batch = self.config.scheduler.max_batch_size
        while True:
            batch = self.synthesized.get_batch(max_batch)
            for item in batch:
                job = item.job
                if job.finished:
                    self.release(item)
                    continue
                state.job_id, state.kind, state.busy_since = job.job_id, job.kind.label, time.time()
                state.partition = item.index
                job.device = state.device.label
                try:
                    self._prove(item, state.device)
                except Cancelled:
                    self.release(item)
                except Exception as e:
                    log.warning(
                        "job %s partition %d: proving failed: %s", job.job_id, item.index, e
                    )
                    self._fail(item, f"partition {item.index}: proving failed: {_describe(e)}")
                finally:
                    state.job_id = state.kind = ""
                    state.partition = -1

    def _prove(self, item: WorkItem, device: Device) -> None:
        job = item.job
        r1cs = self.kinds.handler(job.kind).r1cs(job.circuit_id)
        lease = self.srs.acquire_device(item.lease, device, cancelled=lambda: job.finished)
        try:
            now = time.monotonic()
            job.stage("srs_load", now - lease.load_ms / 1000, now)
            if job.finished:
                self.release(item)
                return
            t = time.monotonic()
            job.partition_state(item.index, "gpu")
            # the backend's temporaries come out of the partition's device reservation
            lent = (
                device.budget.lend(lease.working)
                if lease.working is not None
                else contextlib.nullcontext()
            )
            stages = prover.StageTimes()
            with device.activate(), lent:
                proof = prover.prove(lease.key, r1cs, item.witness.assignment, times=stages)
            end = time.monotonic()
            dt = end - t
            for name, secs in (stages.seconds | stages.detail).items():
                self.metrics.observe_prover(name, job.kind.label, secs)
        finally:
            self.srs.release_device(lease)
        job.stage("gpu_compute", t, end)
        job.partition_state(item.index, "done")
        self.metrics.observe_stage("gpu", job.kind.label, dt)
        item.proof = proof
        self.release(item)  # the witness and host working set are no longer needed
        if not job.finished:
            self.proven.put(item)

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
                vk = self.srs.verifying_key(job.circuit_id)
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
                self.hooks.partition_done(job, item)
            except Exception as e:
                log.warning("job %s: epilogue failed: %s", job.job_id, e)
                job.partition_state(item.index, "failed")
                self.hooks.failed(
                    job, f"partition {item.index}: verification failed: {_describe(e)}"
                )
            finally:
                state.job_id = state.kind = ""


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text if type(e).__module__.startswith("cuzk") else f"{type(e).__name__}: {text}"
