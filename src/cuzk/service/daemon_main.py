"""``cuzk-daemon`` (and ``cuzk`` with no subcommand, as Curio runs it): the proving service.

    cuzk-daemon [--config cuzk.toml | --no-config] [--listen ADDR]
                [--status-listen HOST:PORT] [--log-level LEVEL]

Without ``--config`` it reads Curio's ``/data/zk/cuzk.toml`` when that file
exists; a config file gets Curio's defaults for what it leaves out (socket
``unix:///run/curio/cuzk.sock``, parameters ``/data/zk/params``), and so does
the daemon with no config file, or with a ``--config`` naming a file that does
not exist (a warning says so), as Curio's daemon does. ``--no-config`` runs on
the built-in defaults (docs/SERVICE.md): a unix socket under $CUZK_HOME
(~/.cache/cuzk), the CPU backend unless a GPU is present, and development keys
for the demo kind generated on first use. Everything about the listeners (the
token file, the TLS pair, a unix socket another daemon serves) is checked
before anything starts; plain TCP without a token beyond loopback serves
loopback peers only, with a warning, unless ``allow_insecure_tcp``. One daemon
holds a journal at a time: a second exits 2 naming the first's pid, its
journal and socket untouched; the default journal follows from the listen
address, so daemons with different addresses run side by side.
SIGTERM or SIGINT (Ctrl-C) drains: no new proofs are accepted, accepted ones
finish (for at most ``[daemon] shutdown_timeout``; what is left is journalled
and resumed at the next start); a second signal stops at once.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from cuzk.engine.config import (
    CURIO_CONFIG_PATH,
    Config,
    cuzk_home,
    daemon_config,
    default_config_path,
)
from cuzk.errors import CuzkError

log = logging.getLogger("cuzk.daemon")


# Characters a client's text could use to forge or hide a log line: C0 and C1 controls,
# DEL, and Unicode's line and paragraph separators.
_UNPRINTABLE = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_UNPRINTABLE.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_UNPRINTABLE.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


class _TextFormatter(logging.Formatter):
    """One record, one line: a newline in a message (a request id, a field of a
    client's input) is written as ``\\n``, so that it cannot start a forged line.
    A traceback, the daemon's own text, keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = record.message.translate(_UNPRINTABLE)
        return super().formatMessage(record)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


def _setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    name = {"warn": "WARNING", "trace": "DEBUG"}.get(level.lower(), level.upper())
    root.setLevel(getattr(logging, name, logging.INFO))


# Options of the daemon, which ``cuzk`` with no subcommand takes too: (flags, takes a value).
DAEMON_OPTIONS = {
    "-c": True,
    "--config": True,
    "--no-config": False,
    "-l": True,
    "--listen": True,
    "--status-listen": True,
    "--log-level": True,
}


def build_parser(prog: str = "cuzk-daemon") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="the cuzk proving daemon")
    p.add_argument(
        "-c",
        "--config",
        help=f"TOML config (default: {CURIO_CONFIG_PATH}; a file that does not exist means "
        "Curio's defaults, with a warning)",
    )
    p.add_argument(
        "--no-config",
        action="store_true",
        help="run on the built-in defaults (state, socket and keys under $CUZK_HOME) even "
        f"when {CURIO_CONFIG_PATH} exists",
    )
    p.add_argument("-l", "--listen", action="append", help="listen address (repeatable)")
    p.add_argument("--status-listen", help="HOST:PORT for HTTP /metrics and /status")
    p.add_argument("--log-level", help="trace, debug, info, warn, error")
    return p


def is_daemon_command(argv: Sequence[str]) -> bool:
    """True when ``argv`` holds only daemon options (``cuzk --config F`` as Curio's
    unit runs it, or a bare ``cuzk``), so ``cuzk`` runs the daemon."""
    i = 0
    while i < len(argv):
        flag, eq, _ = argv[i].partition("=")
        if flag not in DAEMON_OPTIONS:
            return False
        i += 2 if DAEMON_OPTIONS[flag] and not eq else 1
    return True


def config_path(args: argparse.Namespace) -> Path | None:
    """The config file to read: ``--config``, else Curio's default path when it exists."""
    if args.config:
        return Path(args.config)
    if args.no_config:
        return None
    return default_config_path()


def configure(args: argparse.Namespace) -> Config:
    return configure_from(args)[0]


def configure_from(args: argparse.Namespace) -> tuple[Config, str]:
    """The config and a line saying where it came from."""
    if args.no_config and not args.config:
        cfg, source = Config(), "none (--no-config): the built-in defaults"
    else:
        cfg, source = daemon_config(config_path(args))
    daemon = {}
    if args.listen:
        daemon["listen"] = args.listen
    if args.status_listen is not None:
        daemon["status_listen"] = args.status_listen
    if daemon:
        cfg = cfg.with_overrides(daemon=daemon)
    if args.log_level:
        cfg = cfg.with_overrides(logging={"level": args.log_level})
    return cfg, source


def main(argv: Sequence[str] | None = None, prog: str = "cuzk-daemon") -> int:
    args = build_parser(prog).parse_args(argv)
    # Config warnings (unknown keys) go to stderr in the configured format.
    _setup_logging(args.log_level or "info", "")
    path = config_path(args)
    try:
        cfg, source = configure_from(args)
    except CuzkError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    _setup_logging(cfg.logging.level, cfg.logging.format)
    log.info("config: %s", source)
    readable = path is not None and path.is_file()
    return run(cfg, str(path) if readable else "config")


def freeze_startup_heap() -> None:
    """What start-up made (modules, the engine, the servers) is left out of the
    cyclic collector's full passes from now on: a full pass over the whole heap
    paused every call for up to 290 ms on a 2-core host with 12,000 finished jobs
    kept (issue 32); it now scans what was made since."""
    gc.collect()
    gc.freeze()


def run(cfg: Config, source: str = "config") -> int:
    from cuzk.engine.admission import limit_malloc_arenas
    from cuzk.engine.engine import Engine
    from cuzk.engine.statelock import StateLock, adopt
    from cuzk.service.http import StatusServer
    from cuzk.service.server import (
        Servers,
        check_listeners,
        loopback_only,
        parse_address,
        read_tls,
        read_token,
        refusal,
    )

    limit_malloc_arenas()  # before the engine's and grpc's threads start
    # the journal of an earlier version (before it followed the listen address)
    # moves into this daemon's state folder when no daemon holds it
    legacy = cuzk_home() / "journal.sqlite"
    if not cfg.daemon.journal and adopt(legacy, cfg.daemon.journal_path()):
        log.warning(
            "moved the journal of an earlier version from %s to %s (its unfinished jobs resume)",
            legacy,
            cfg.daemon.journal_path(),
        )
    try:  # whatever would stop the daemon stops it before its journal is read
        StateLock(cfg.daemon.journal_path()).probe()  # one daemon per state (its pid named)
        warnings = check_listeners(cfg.daemon, source)
    except CuzkError as e:
        log.error("%s", e)
        return 2
    log.info("journal: %s", cfg.daemon.journal_path())
    if not cfg.daemon.journal and legacy.exists() and legacy != cfg.daemon.journal_path():
        log.warning(
            "%s is the journal of an earlier version of this daemon, in use by another "
            'daemon or left beside this one\'s; to resume its jobs here, add journal = "%s" '
            "under [daemon]",
            legacy,
            legacy,
        )

    stop = threading.Event()
    signals = {"count": 0}

    def on_signal(signum: int, _frame: object) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            log.warning("second signal: stopping now (unfinished jobs stay journalled)")
            engine_ref.drain_abort = True
        stop.set()

    class _Ref:
        drain_abort = False

    engine_ref = _Ref()
    try:
        engine = Engine(cfg)
        engine.start()
    except (CuzkError, OSError, RuntimeError) as e:
        log.error("cannot start the engine: %s", e)
        return 2
    servers = Servers(engine, source)
    http = None
    try:
        servers.start()
        if cfg.daemon.status_listen:
            token = read_token(cfg.daemon.auth_token_file) if cfg.daemon.auth_token_file else None
            tls = read_tls(cfg.daemon, source)
            addr = parse_address(cfg.daemon.status_listen)
            http = StatusServer(
                engine,
                addr.hostport or "",
                token,
                tls=tls.server_context() if tls is not None else None,
                loopback_only=(
                    refusal(addr, "status_listen", source)
                    if loopback_only(cfg.daemon, addr)
                    else None
                ),
            )
            http.start()
        for warning in warnings:
            if "status_listen" in warning or "clear text" in warning:
                log.warning("%s", warning)
    except (CuzkError, OSError, RuntimeError) as e:
        log.error("cannot listen: %s", e)
        servers.stop(0)
        engine.stop()
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    freeze_startup_heap()
    log.info("cuzk-daemon ready on %s", ", ".join(servers.bound))
    while not stop.wait(1.0):
        pass
    log.info("draining: finishing accepted proofs (at most %.0fs)", cfg.daemon.shutdown_timeout)
    engine.drain(cfg.daemon.shutdown_timeout, abort=lambda: engine_ref.drain_abort)
    servers.stop(grace=2.0)
    if http is not None:
        http.stop()
    engine.stop()
    log.info("cuzk-daemon stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
