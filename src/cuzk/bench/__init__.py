"""Benchmarks and experiments: one layer, above the library, beside ``cli/``.

Nothing in the library imports it; ``cuzk-bench`` registers its benchmark
subcommands from here (:mod:`cuzk.cli.bench`), and the experiments that are
not subcommands run as modules. Like ``cli/``, an edge: its modules may
print their reports.

- shared: :mod:`~cuzk.bench.timing` (CUDA-event and wall-clock timers, CPU
  seconds), :mod:`~cuzk.bench.hostmem` (host memory of a process tree),
  :mod:`~cuzk.bench.inputs` (random scalars, bases and PoRep-shaped matrices
  made on the device);
- ``cuzk-bench`` subcommands: ``kernels`` and ``gpu-proof``
  (:mod:`~cuzk.bench.kernels` over the families :mod:`~cuzk.bench.fr_ntt`
  and :mod:`~cuzk.bench.msm`, :mod:`~cuzk.bench.gpu_proof`), ``prove-c1``
  (:mod:`~cuzk.bench.prove_c1`), ``circuit-witness``
  (:mod:`~cuzk.bench.circuit_witness`), ``load-params``
  (:mod:`~cuzk.bench.load_params`), and the daemon load of ``batch`` /
  ``stress`` / ``demo-service`` (:mod:`~cuzk.bench.load`);
- ``python -m cuzk.bench.X``: ``msm`` (MSM rows, variants and checks against
  the CPU), ``kernels`` (the ``kernels`` subcommand alone), ``cpu_native``
  (the CPU backend's C kernels against their Python twins),
  ``query_scalars`` (the setup's query scalars, both paths),
  ``synthesis_processes`` (synthesis in threads and in processes),
  ``snarkjs`` (cuzk against ``snarkjs groth16 prove``; a source tree with
  ``make test``'s tools), ``profile_kernels`` (one launch of each hot kernel,
  for Nsight Compute).
"""
