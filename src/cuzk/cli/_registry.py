"""Subcommands are contributed by modules, one per concern.

Each listed module exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (taking the parsed args, returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence


def run(prog: str, description: str, modules: Sequence[str], argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # not written yet in this checkout
                continue
            raise
        module.register(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return int(args.func(args) or 0)
