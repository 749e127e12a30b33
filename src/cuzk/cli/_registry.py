"""Subcommands are contributed by modules, one per concern.

Each listed module exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (taking the parsed args, returning an exit code);
an entry ``module:function`` names another registering function of a module
(``cuzk.cli.cmd_demo:register_service``: the demo's ``cuzk-bench`` command).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence


def run(
    prog: str,
    description: str,
    modules: Sequence[str],
    argv: Sequence[str] | None,
    epilog: str | None = None,
    top_options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Parse ``argv`` against the modules' subcommands and run the chosen one.

    ``top_options`` adds options the tool takes before its subcommand too (the
    subcommands declare them again with ``default=argparse.SUPPRESS``, so a value
    given on either side survives).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR")
    if top_options is not None:
        top_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for entry in modules:
        name, _, function = entry.partition(":")
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # not written yet in this checkout
                continue
            raise
        getattr(module, function or "register")(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return int(args.func(args) or 0)
