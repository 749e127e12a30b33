"""The synthesis workers: each takes the highest-priority partition, pins its
key and reserves its host working set (waiting for memory, never
over-committing), and makes its witness — the full assignment, or, where the
assignment is made on the proving device, its hint table — in its thread or
in the pool of worker processes (:mod:`cuzk.engine.synthpool`). The result
waits in the bounded GPU queue.
"""

from __future__ import annotations

import logging
import time

from cuzk.engine.budget import Cancelled, time_critical
from cuzk.engine.kinds.base import PartitionInput, ProofKindHandler
from cuzk.engine.pipeline.queues import PipelineBase, WorkerState, describe, first_urgent
from cuzk.engine.scheduler import WorkItem

log = logging.getLogger(__name__)


class SynthesisWorkers(PipelineBase):
    """The synthesis stage of :class:`cuzk.engine.pipeline.Pipeline`."""

    def _synthesis_loop(self, state: WorkerState) -> None:
        while True:
            if state.urgent:  # the first time-critical partition queued, if any
                got = self.pending.get_batch(1, timeout=1.0, select=first_urgent)
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
                self._fail(item, f"partition {item.index}: {describe(e)}")
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

    def witness_on_device(self, handler: ProofKindHandler) -> bool:
        """Whether this kind's partitions get their assignment on the device that
        proves them (``[pipeline] witness``)."""
        mode = self.config.pipeline.witness
        if mode == "host" or not handler.device_witness:
            return False
        return mode == "device" or all(d.backend.name == "cuda" for d in self.devices)
