"""Curio's own configs through ``cuzk --config`` (issue 14's acceptance).

The texts below carry the facts of Curio's documentation
(documentation/en/experimental-features/cuzk-proving-daemon.md, "Minimal
configuration") and of ``extern/cuzk/cuzk.example.toml``: their sections,
keys and values. Only the port and the parameters folder are moved into the
test's own space (the daemon must not take port 9820 or write /data/zk on a
shared machine).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.cli.bench import main as bench

# Curio's documented minimal config. It listens on 0.0.0.0; Curio's co-located
# deployment (its client's Address = "127.0.0.1:9820") is the loopback variant.
MINIMAL = """
[daemon]
listen = "{listen}"

[srs]
param_cache = "{params}"
preload = ["porep-32g"]

[synthesis]
partition_workers = 7
"""

# cuzk.example.toml, comments left out.
EXAMPLE = """
[daemon]
listen = "0.0.0.0:{port}"

[srs]
param_cache = "{params}"

[memory]
total_budget = "auto"
safety_margin = "5GiB"
eviction_min_idle = "5m"

[gpus]
devices = []
gpu_threads = 32
gpu_workers_per_device = 2

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 1

[logging]
level = "info"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cuzk(home: Path, config: str, cuzk_home: Path | None = None) -> subprocess.Popen:
    """``cuzk --config HOME/cuzk.toml``, as Curio's systemd unit runs it."""
    cfg = home / "cuzk.toml"
    cfg.write_text(config)
    script = Path(sys.executable).with_name("cuzk")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "cuzk.cli.main"]
    env = {**os.environ, "CUZK_HOME": str(cuzk_home or home)}
    with open(home / "daemon.log", "wb") as log:
        return subprocess.Popen(
            [*cmd, "--config", str(cfg)], env=env, stdout=log, stderr=subprocess.STDOUT
        )


def wait_status(addr: str, capsys, extra: list[str] | None = None) -> str:
    """``cuzk-bench -a ADDR status`` (Curio's order), retried while the daemon starts."""
    import time

    end = time.monotonic() + 60
    while True:
        rc = bench(["-a", addr, *(extra or []), "status"])
        out, err = capsys.readouterr()
        if rc == 0:
            return out
        assert "UNAVAILABLE" in err and time.monotonic() < end, err
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_curios_documented_minimal_config_on_loopback_starts(tmp_path: Path, capsys) -> None:
    port = free_port()
    proc = cuzk(tmp_path, MINIMAL.format(listen=f"127.0.0.1:{port}", params=tmp_path / "p"))
    try:
        out = wait_status(f"127.0.0.1:{port}", capsys)
        assert "=== cuzk daemon status ===" in out and "proofs completed: 0" in out
    finally:
        assert stop(proc) == 0
    log = (tmp_path / "daemon.log").read_text()
    assert "[srs] preload is deprecated" in log
    assert "[synthesis] partition_workers is deprecated" in log
    assert "plain TCP without a bearer token on loopback" in log


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minimal", "example"])
def test_curios_configs_on_all_addresses_start_and_serve_loopback_peers_only(
    tmp_path: Path, capsys, which: str
) -> None:
    """Unchanged but for the port and the folders: the daemon starts (no restart loop
    under systemd), serves Curio on this host, and answers another host
    UNAUTHENTICATED naming the line its operator adds. The other host is this
    machine's own non-loopback address (127.0.0.0/8 is loopback, all of it)."""
    from netaddr import non_loopback_ip

    other_host = non_loopback_ip()
    port, params = free_port(), tmp_path / "p"
    text = (
        MINIMAL.format(listen=f"0.0.0.0:{port}", params=params)
        if which == "minimal"
        else EXAMPLE.format(port=port, params=params)
    )
    proc = cuzk(tmp_path, text)
    try:
        out = wait_status(f"127.0.0.1:{port}", capsys)
        assert "=== cuzk daemon status ===" in out
        assert bench(["-a", f"{other_host}:{port}", "status"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: UNAUTHENTICATED: 0.0.0.0:{port} serves loopback peers only")
        assert f"adds one line to [daemon] in {tmp_path / 'cuzk.toml'}: " in err
        assert 'auth_token_file = "/path/to/token"' in err and "allow_insecure_tcp = true" in err
    finally:
        assert stop(proc) == 0
    log = (tmp_path / "daemon.log").read_text()
    assert f"WARNING cuzk.service.server: {tmp_path / 'cuzk.toml'}: [daemon] listen " in log
    assert f"0.0.0.0:{port} is reachable from other machines and has no bearer token" in log


@pytest.mark.slow
def test_two_daemons_with_different_addresses_run_side_by_side(tmp_path: Path, capsys) -> None:
    """One daemon per GPU on a host, each with its own config and address and nothing
    else: their journals follow from their addresses. The same address twice is
    refused, naming the daemon that has it."""
    ports = [free_port(), free_port()]
    homes = [tmp_path / "gpu0", tmp_path / "gpu1"]
    procs = []
    for home, port in zip(homes, ports, strict=True):
        home.mkdir()
        config = MINIMAL.format(listen=f"127.0.0.1:{port}", params=tmp_path / "p")
        procs.append(cuzk(home, config, cuzk_home=tmp_path / "state"))
    try:
        for port in ports:
            assert "proofs completed: 0" in wait_status(f"127.0.0.1:{port}", capsys)
        journals = sorted((tmp_path / "state" / "daemons").glob("*/journal.sqlite"))
        assert len(journals) == 2
        assert [j.parent.name.split("-")[0] for j in journals] == [
            f"tcp_127.0.0.1_{p}" for p in sorted(ports, key=str)
        ]
        again = tmp_path / "again"
        again.mkdir()
        config = MINIMAL.format(listen=f"127.0.0.1:{ports[0]}", params=tmp_path / "p")
        third = cuzk(again, config, cuzk_home=tmp_path / "state")
        assert third.wait(timeout=60) == 2
        said = (again / "daemon.log").read_text()
        assert f"in use by another cuzk-daemon (pid {procs[0].pid})" in said
    finally:
        for proc in procs:
            assert stop(proc) == 0


@pytest.mark.slow
@pytest.mark.parametrize("line", ["allow_insecure_tcp", "auth_token_file"])
def test_curios_example_starts_with_the_one_line(tmp_path: Path, capsys, line: str) -> None:
    port = free_port()
    token = tmp_path / "token"
    token.write_text("curio-dropin-token-0123456789\n")
    added = "allow_insecure_tcp = true" if line == "allow_insecure_tcp" else f'{line} = "{token}"'
    text = EXAMPLE.format(port=port, params=tmp_path / "p")
    text = text.replace("[daemon]\n", f"[daemon]\n{added}\n", 1)
    proc = cuzk(tmp_path, text)
    try:
        addr = f"127.0.0.1:{port}"
        if line == "auth_token_file":
            out = wait_status(addr, capsys, ["--token-file", str(token)])
            assert bench(["-a", addr, "status"]) == 1  # no token: refused
            assert "UNAUTHENTICATED" in capsys.readouterr().err
        else:
            out = wait_status(addr, capsys)
        assert "=== cuzk daemon status ===" in out
    finally:
        assert stop(proc) == 0
    log = (tmp_path / "daemon.log").read_text()
    assert ("INSECURE: [daemon] listen 0.0.0.0:" in log) == (line == "allow_insecure_tcp")
    assert "[gpus] gpu_threads has no effect" in log
