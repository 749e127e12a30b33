"""The epilogue workers: each proven partition's proof verified against the
key's verifying key (:func:`cuzk.engine.prove.verify_partition`); a verified
one is reported to the engine, one that does not verify fails its job (it is
never returned).
"""

from __future__ import annotations

import logging
import time

from cuzk.engine.pipeline.queues import PipelineBase, WorkerState, describe
from cuzk.engine.prove import verify_partition
from cuzk.groth16.proof import Proof

log = logging.getLogger(__name__)


class EpilogueWorkers(PipelineBase):
    """The epilogue stage of :class:`cuzk.engine.pipeline.Pipeline`."""

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
                ok = verify_partition(vk, item.public_inputs, proof)
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
                    job, f"partition {item.index}: verification failed: {describe(e)}"
                )
            finally:
                state.job_id = state.kind = ""
