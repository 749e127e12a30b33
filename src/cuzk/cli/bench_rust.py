"""Curio's ``cuzk-bench`` subcommands that measure the Rust daemon's internals
(its pre-compiled constraint evaluator and slot pipeline): refused here, naming
the command that measures the same thing in this daemon."""

from __future__ import annotations

import argparse
import sys

# Curio's subcommand: what it measured, and ours that measures it here.
EQUIVALENTS = {
    "pce-bench": (
        "extracts the constraint matrices (PCE) and times witness + mat-vec against synthesis",
        "the matrices are compiled once and cached by every kind; "
        "`cuzk-bench circuit-witness porep --sector-size SIZE --check` times compile and "
        "witness and checks every constraint, `cuzk-bench synth-only --c1 FILE` times "
        "a C1's synthesis",
    ),
    "pce-pipeline": (
        "runs N proofs through the PCE path logging memory",
        "`cuzk-bench prove-c1 --c1 FILE` proves a C1 without the daemon, each stage "
        "timed with the peak memory (`--repeat N`: N proofs a partition, `--processes P`: "
        "synthesis in P processes)",
    ),
    "slotted-bench": (
        "times the slot pipeline for several slot sizes",
        "there are no slots: partitions flow one by one within the memory budgets; "
        "`cuzk-bench batch -t porep --c1 FILE -c N -j J` times proofs through the daemon, "
        "`cuzk-bench prove-c1 --c1 FILE --processes P` without it",
    ),
}


def register(sub: argparse._SubParsersAction) -> None:
    for name, (measured, ours) in EQUIVALENTS.items():
        # Curio's flags are taken as they come (no option of ours: "+" marks none), so
        # that what is said is the refusal, not a usage error.
        p = sub.add_parser(
            name, help=f"Curio's; refused here: {ours.split(';')[0]}", prefix_chars="+"
        )
        p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
        p.set_defaults(func=_refuse, rust_name=name, measured=measured, ours=ours)


def _refuse(args: argparse.Namespace) -> int:
    print(
        f"cuzk-bench {args.rust_name}: Curio's Rust bench {args.measured}, which has no "
        f"twin in this daemon: {args.ours}",
        file=sys.stderr,
    )
    return 2
