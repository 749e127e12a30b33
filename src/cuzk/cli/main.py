"""``cuzk``: prove, verify and inspect from the command line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cuzk.cli._registry import run

MODULES = (
    "cuzk.cli.cmd_demo",  # demo: set up, prove, verify the built-in circuit
    "cuzk.cli.cmd_interop",  # prove / verify with snarkjs and bellperson files
    "cuzk.cli.cmd_circuits",  # circuit-info and Filecoin proving commands
    "cuzk.cli.cmd_params",  # params-list, gen-params: the circuits' key files
)


def main(argv: Sequence[str] | None = None) -> int:
    return run("cuzk", "Groth16 proving for Filecoin over BLS12-381", MODULES, argv)


if __name__ == "__main__":
    sys.exit(main())
