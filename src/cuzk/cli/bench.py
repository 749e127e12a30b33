"""``cuzk-bench``: kernel benchmarks and load against a running daemon."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cuzk.cli._registry import run
from cuzk.cli.bench_service import connection_options

MODULES = (
    "cuzk.cli.bench_kernels",  # kernels: per-operation GPU timings against measured ceilings
    "cuzk.cli.bench_service",  # single / batch / stress / status / preload / metrics
    "cuzk.cli.bench_gen",  # gen-c1 / gen-snap: synthetic Filecoin test inputs
    "cuzk.cli.bench_vanilla",  # gen-vanilla: vanilla proofs as Curio sends them
    "cuzk.cli.bench_params",  # load-params: a key file streamed into a device
)


def main(argv: Sequence[str] | None = None) -> int:
    return run("cuzk-bench", "benchmarks for cuzk", MODULES, argv, top_options=connection_options)


if __name__ == "__main__":
    sys.exit(main())
