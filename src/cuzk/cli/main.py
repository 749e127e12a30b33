"""``cuzk``: prove, verify and inspect from the command line; with no subcommand,
the daemon (``cuzk --config /data/zk/cuzk.toml``, as Curio's systemd unit runs it)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cuzk.cli._registry import run

MODULES = (
    "cuzk.cli.cmd_demo",  # demo: set up, prove, verify the built-in circuit
    "cuzk.cli.cmd_interop",  # prove / verify with snarkjs and bellperson files
    "cuzk.cli.cmd_circuits",  # circuit-info and Filecoin proving commands
    "cuzk.cli.cmd_params",  # params-list, gen-params: the circuits' key files
    "cuzk.cli.cmd_doctor",  # doctor, kernels: what the host offers; the CUDA kernels built once
    "cuzk.bench.circuit_bench",  # circuit-bench: a PoSt circuit's compile and witness, timed
)

EPILOG = (
    "With no COMMAND, cuzk runs the proving daemon, as cuzk-daemon does and as Curio's "
    "unit starts it: cuzk [--config FILE | --no-config] [--listen ADDR] "
    "[--status-listen HOST:PORT] [--log-level LEVEL]; without --config it reads "
    "/data/zk/cuzk.toml when that exists."
)


def main(argv: Sequence[str] | None = None) -> int:
    from cuzk.service.daemon_main import is_daemon_command

    args = list(sys.argv[1:] if argv is None else argv)
    if is_daemon_command(args):
        from cuzk.service.daemon_main import main as daemon_main

        return daemon_main(args, prog="cuzk")
    return run("cuzk", "Groth16 proving for Filecoin over BLS12-381", MODULES, args, EPILOG)


if __name__ == "__main__":
    sys.exit(main())
