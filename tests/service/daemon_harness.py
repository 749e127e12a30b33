"""An in-process daemon (engine + gRPC servers) for the service and CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.service.client import Client
from cuzk.service.server import Servers


@dataclass
class Daemon:
    engine: Engine
    servers: Servers
    home: Path

    def client(self, index: int = 0, **kw: Any) -> Client:
        return Client(self.servers.bound[index], **kw)


def daemon_config(home: Path, **sections: dict[str, Any]) -> Config:
    base = {
        "daemon": {"listen": [f"unix://{home}/cuzk.sock"], "journal": str(home / "journal.sqlite")},
        "srs": {"param_cache": str(home / "params")},
        "memory": {"total_budget": "2GiB", "eviction_min_idle": "0s"},
        "gpus": {"backend": "cpu"},
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Config().with_overrides(**base)


@contextmanager
def running_daemon(home: Path, **sections: dict[str, Any]) -> Iterator[Daemon]:
    cfg = daemon_config(home, **sections)
    engine = Engine(cfg)
    engine.start()
    servers = Servers(engine)
    try:
        servers.start()
        yield Daemon(engine, servers, home)
    finally:
        servers.stop(grace=0.5)
        engine.drain(10.0)
        engine.stop()
