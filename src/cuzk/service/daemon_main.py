"""``cuzk-daemon``: the proving service.

    cuzk-daemon [--config cuzk.toml] [--listen ADDR] [--status-listen HOST:PORT]
                [--log-level LEVEL]

With no config file it runs on the built-in defaults (docs/SERVICE.md): a
unix socket under $CUZK_HOME (~/.cache/cuzk), the CPU backend unless a GPU
is present, and development keys for the demo kind generated on first use.
SIGTERM (or Ctrl-C) drains: no new proofs are accepted, accepted ones finish
(for at most ``[daemon] shutdown_timeout``; what is left is journalled and
resumed at the next start); a second signal stops at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from cuzk.engine.config import Config, load_config
from cuzk.errors import CuzkError

log = logging.getLogger("cuzk.daemon")


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
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    name = {"warn": "WARNING", "trace": "DEBUG"}.get(level.lower(), level.upper())
    root.setLevel(getattr(logging, name, logging.INFO))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cuzk-daemon", description="the cuzk proving daemon")
    p.add_argument("-c", "--config", help="TOML config (default: the built-in defaults)")
    p.add_argument("-l", "--listen", action="append", help="listen address (repeatable)")
    p.add_argument("--status-listen", help="HOST:PORT for HTTP /metrics and /status")
    p.add_argument("--log-level", help="trace, debug, info, warn, error")
    return p


def configure(args: argparse.Namespace) -> Config:
    cfg = load_config(args.config)
    daemon = {}
    if args.listen:
        daemon["listen"] = args.listen
    if args.status_listen is not None:
        daemon["status_listen"] = args.status_listen
    if daemon:
        cfg = cfg.with_overrides(daemon=daemon)
    if args.log_level:
        cfg = cfg.with_overrides(logging={"level": args.log_level})
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = configure(args)
    except CuzkError as e:
        print(f"cuzk-daemon: {e}", file=sys.stderr)
        return 2
    _setup_logging(cfg.logging.level, cfg.logging.format)
    return run(cfg)


def run(cfg: Config) -> int:
    from cuzk.engine.engine import Engine
    from cuzk.service.http import StatusServer
    from cuzk.service.server import Servers, parse_address, read_token

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
    servers = Servers(engine)
    http = None
    try:
        servers.start()
        if cfg.daemon.status_listen:
            token = read_token(cfg.daemon.auth_token_file) if cfg.daemon.auth_token_file else None
            http = StatusServer(
                engine, parse_address(cfg.daemon.status_listen).hostport or "", token
            )
            http.start()
    except (CuzkError, OSError, RuntimeError) as e:
        log.error("cannot listen: %s", e)
        servers.stop(0)
        engine.stop()
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
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
