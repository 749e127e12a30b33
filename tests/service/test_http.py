"""The HTTP status listener under attack (issue 15, item 5): no thread per connection, idle
connections cut, TLS and the token as on gRPC."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from daemon_harness import running_daemon
from test_daemon_main import make_cert

from cuzk.service import http as http_module
from cuzk.service.client import Client
from cuzk.service.http import StatusServer


def get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> bytes:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=30, context=context) as r:
        return r.read()


def test_idle_connections_hold_no_thread_and_are_cut(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(http_module, "REQUEST_TIMEOUT_S", 2.0, raising=False)
    with running_daemon(tmp_path) as d:
        server = StatusServer(d.engine, "127.0.0.1:0", None)
        server.start()
        idle: list[socket.socket] = []
        try:
            host, port = server.address.rsplit(":", 1)
            before = threading.active_count()
            started = time.monotonic()
            idle = [socket.create_connection((host, int(port))) for _ in range(300)]
            # one half-sent request among them (slowloris)
            idle[0].sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.5)
            assert threading.active_count() - before <= 2
            status = json.loads(get(f"http://{server.address}/status"))  # others are served
            assert status["totals"]["completed"] == 0
            for s in idle:  # the server closes each once REQUEST_TIMEOUT_S has passed,
                s.settimeout(30)  # or sooner to make room (MAX_CONNECTIONS_PER_PEER)
                try:
                    head = s.recv(4096)
                except ConnectionResetError:
                    head = b""
                assert head == b"" or head.startswith(b"HTTP/1.1 408"), head[:40]
            assert time.monotonic() - started < 25
        finally:
            for s in idle:
                s.close()
            server.stop()


def test_oversized_and_odd_requests_are_answered_not_served(tmp_path: Path) -> None:
    with running_daemon(tmp_path) as d:
        server = StatusServer(d.engine, "127.0.0.1:0", None)
        server.start()
        try:
            host, port = server.address.rsplit(":", 1)
            cases = {
                b"GET /status HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n": b" 431 ",
                b"POST /status HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello": b" 405 ",
                b"\x16\x03\x01\x02\x00garbage\r\n\r\n": b" 400 ",
                b"GET /nothing-here HTTP/1.1\r\n\r\n": b" 404 ",
            }
            for raw, code in cases.items():
                with socket.create_connection((host, int(port)), timeout=30) as s:
                    s.sendall(raw)
                    assert code in s.recv(4096).split(b"\r\n", 1)[0] + b" ", raw[:20]
            assert b"cuzk_uptime_seconds" in get(f"http://{server.address}/metrics")
        finally:
            server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_status_listener_uses_tls_and_the_token_as_grpc_does(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path, "daemon")
    token = "status-token-0123456789"
    (tmp_path / "token").write_text(token)
    port = free_port()
    (tmp_path / "cuzk.toml").write_text(
        f"""
[daemon]
listen = ["unix://{tmp_path}/cuzk.sock", "127.0.0.1:0"]
status_listen = "127.0.0.1:{port}"
auth_token_file = "{tmp_path}/token"
tls_cert_file = "{cert}"
tls_key_file = "{key}"
journal = "{tmp_path}/journal.sqlite"
[gpus]
backend = "cpu"
[memory]
total_budget = "1GiB"
[srs]
param_cache = "{tmp_path}/params"
"""
    )
    env = {**os.environ, "CUZK_HOME": str(tmp_path)}
    with open(tmp_path / "daemon.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cuzk.service.daemon_main", "--config", f"{tmp_path}/cuzk.toml"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        Client(f"unix://{tmp_path}/cuzk.sock").wait_ready(60)
        tls = ssl.create_default_context(cafile=str(cert))
        base = f"https://127.0.0.1:{port}"
        status = json.loads(get(f"{base}/status", token, tls))
        assert status["draining"] is False
        with pytest.raises(urllib.error.HTTPError) as ei:
            get(f"{base}/status", None, tls)
        assert ei.value.code == 401
        with pytest.raises((urllib.error.URLError, ConnectionError, http_client_errors())):
            get(f"http://127.0.0.1:{port}/status", token)  # no plain text on a TLS listener
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def http_client_errors() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def test_the_status_page_may_not_be_framed_or_load_from_elsewhere(tmp_path: Path) -> None:
    """Every answer carries a Content-Security-Policy (the page's own inline
    script and style, data from this origin only) and X-Frame-Options: DENY."""
    with running_daemon(tmp_path) as d:
        server = StatusServer(d.engine, "127.0.0.1:0", None)
        server.start()
        try:
            for path in ("/", "/status", "/metrics"):
                with urllib.request.urlopen(f"http://{server.address}{path}", timeout=30) as r:
                    csp = r.headers["Content-Security-Policy"]
                    assert r.headers["X-Frame-Options"] == "DENY", path
                    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
                    assert "connect-src 'self'" in csp
        finally:
            server.stop()


def test_slow_connections_make_room_for_a_client_that_asks_at_once(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 32: 600 slow connections cut /status to 13 % success. At the limit, the
    oldest connection that has sent no request is closed for the new one (scaled
    down: a limit of 40, 20 from one host, 100 slow connections)."""
    monkeypatch.setattr(http_module, "MAX_CONNECTIONS", 40)
    monkeypatch.setattr(http_module, "MAX_CONNECTIONS_PER_PEER", 20)
    with running_daemon(tmp_path) as d:
        server = StatusServer(d.engine, "127.0.0.1:0", None)
        server.start()
        slow: list[socket.socket] = []
        try:
            host, port = server.address.rsplit(":", 1)
            for _ in range(100):
                s = socket.create_connection((host, int(port)))
                s.sendall(b"GET /status HTTP/1.1\r\n")  # and never the rest
                slow.append(s)
            time.sleep(0.3)
            assert server._by_peer.get("127.0.0.1", 0) <= 20
            ok = 0
            for _ in range(10):
                ok += json.loads(get(f"http://{server.address}/status"))["draining"] is False
            assert ok == 10
            for s in slow[:60]:  # the oldest were closed (reset) to make room
                s.settimeout(5)
                with contextlib.suppress(ConnectionResetError):
                    assert s.recv(100) == b""
        finally:
            for s in slow:
                s.close()
            server.stop()
