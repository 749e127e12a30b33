"""``cuzk-bench``: benchmarks (:mod:`cuzk.bench`), load against a running daemon, test inputs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cuzk.cli._registry import run
from cuzk.cli.bench_service import connection_options

MODULES = (
    "cuzk.bench.kernels",  # kernels, gpu-proof: per-operation GPU timings against measured ceilings
    "cuzk.cli.bench_service",  # single / batch / stress / status / preload / evict / metrics
    "cuzk.cli.cmd_demo:register_service",  # demo-service: the README's main job
    "cuzk.cli.bench_gen",  # gen-c1 / gen-snap: synthetic Filecoin test inputs
    "cuzk.bench.prove_c1",  # prove-c1: PoRep C2 without the daemon, timed
    "cuzk.bench.circuit_witness",  # circuit-witness: one partition's compile and witness, timed
    "cuzk.cli.bench_vanilla",  # gen-vanilla: vanilla proofs as Curio sends them
    "cuzk.bench.load_params",  # load-params: a key file streamed into a device
    "cuzk.bench.synth_only",  # synth-only: a C1's synthesis alone, timed (Curio's)
    "cuzk.cli.bench_rust",  # pce-bench, pce-pipeline, slotted-bench: refused, naming ours
)


def main(argv: Sequence[str] | None = None) -> int:
    return run("cuzk-bench", "benchmarks for cuzk", MODULES, argv, top_options=connection_options)


if __name__ == "__main__":
    sys.exit(main())
