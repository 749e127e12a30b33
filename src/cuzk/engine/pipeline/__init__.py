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

The package's modules, one job each:

- :mod:`.queues`: the queues between the stages, the workers' records and
  threads, the scheduling rule of the GPU queue;
- :mod:`.synthesis`, :mod:`.gpu`, :mod:`.epilogue`: the three kinds of worker;
- :mod:`.witness_plans`: static witness plans resident on devices;
- :mod:`.failover`: a failed device's partitions moved, its probes.

The proof itself is :func:`cuzk.engine.prove.prove_partition`, which
``cuzk-bench prove-c1`` calls too.
"""

from __future__ import annotations

from cuzk.engine.pipeline.epilogue import EpilogueWorkers
from cuzk.engine.pipeline.failover import Failover
from cuzk.engine.pipeline.gpu import GpuWorkers
from cuzk.engine.pipeline.synthesis import SynthesisWorkers
from cuzk.engine.pipeline.witness_plans import WitnessPlans
from cuzk.engine.synthpool import SynthesisPool


class Pipeline(SynthesisWorkers, GpuWorkers, WitnessPlans, EpilogueWorkers, Failover):
    """The partition pipeline: every stage's workers, started together."""

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
