"""The door of the gRPC listeners (issue 32, item 3): hosts holding too many connections
have their new connections dropped by a socket filter on the listening socket, so a
reconnect flood cannot keep a new client out."""

from __future__ import annotations

import contextlib
import socket
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
from daemon_harness import running_daemon

from cuzk.service import door as door_module
from cuzk.service.door import (
    CROWD,
    HOLD_S,
    Door,
    connections_by_host,
    listening_sockets,
    syn_filter,
)
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc


def connects(family: int, addr: tuple, src: str) -> bool:
    try:
        with socket.create_connection(addr, timeout=0.3, source_address=(src, 0)):
            return True
    except OSError:
        return False


@pytest.fixture
def listener() -> socket.socket:
    s = socket.socket(socket.AF_INET)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield s
    s.close()


def attach(sock: socket.socket, held: list[str]) -> None:
    door = Door((sock.getsockname()[1],), 100, 10)
    door._listeners = [sock]
    door.attach(frozenset(held))
    door._listeners = []


def test_the_filter_drops_the_held_hosts_only(listener: socket.socket) -> None:
    addr = listener.getsockname()
    attach(listener, ["127.0.0.2", "127.0.0.9", "2001:db8::1"])
    assert connects(socket.AF_INET, addr, "127.0.0.1")
    assert not connects(socket.AF_INET, addr, "127.0.0.2")  # its SYN dropped
    assert connects(socket.AF_INET, addr, "127.0.0.3")
    attach(listener, [])  # let back in
    assert connects(socket.AF_INET, addr, "127.0.0.2")
    # a program's size: 7 steps ahead, 2 an IPv4 host, 9 an IPv6 one, 1 to accept
    assert len(syn_filter(["1.2.3.4", "::ffff:1.2.3.5", "2001:db8::1"])) == 8 * (
        7 + 1 + 4 + 1 + 9 + 1
    )


def test_the_filter_reads_ipv6_sources() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    s = socket.socket(socket.AF_INET6)
    try:
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no ::1 on this host")
    s.listen(8)
    addr = s.getsockname()[:2]
    attach(s, ["2001:db8::1"])
    assert connects(socket.AF_INET6, addr, "::1")
    attach(s, ["127.0.0.1", "::1"])
    assert not connects(socket.AF_INET6, addr, "::1")
    s.close()


def test_connections_are_counted_by_host_from_the_kernel(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    socks = [
        socket.create_connection(("127.0.0.1", port), source_address=(src, 0))
        for src in ["127.0.0.2"] * 3 + ["127.0.0.3"]
    ]
    counts = connections_by_host([port])
    assert counts["127.0.0.2"] == 3 and counts["127.0.0.3"] == 1
    for s in socks:
        s.close()
    dup = listening_sockets([port])
    assert len(dup) == 1 and dup[0].fileno() != listener.fileno()
    dup[0].close()


def test_who_is_held_back() -> None:
    door = Door((1,), places=80, per_host=20)
    assert door.decide(Counter({"a": 19, "b": 3}), now=0.0) == frozenset()
    assert door.decide(Counter({"a": 20, "b": 3}), now=1.0) == {"a"}
    # held for HOLD_S after it was last at its limit, whatever it holds meanwhile
    assert door.decide(Counter({"b": 3}), now=1.0 + HOLD_S - 0.1) == {"a"}
    assert door.decide(Counter({"b": 3}), now=1.0 + HOLD_S) == frozenset()
    # the last eighth of the places is for hosts with fewer than CROWD connections
    crowd = Counter({f"h{i}": CROWD for i in range(1, 7)} | {"few": CROWD - 1})
    crowd["h0"] = 70 - sum(crowd.values())
    assert crowd["h0"] > CROWD
    assert door.decide(crowd, now=100.0) == {h for h in crowd if h != "few"}


def test_a_reconnect_flood_from_one_host_leaves_room_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """127.0.0.2 keeps opening connections that never send a byte, as fast as it is let
    in; 127.0.0.1 (another host to the daemon) gets GetStatus answered at its first
    try, and the flood's silent connections are shut down."""
    monkeypatch.setattr(door_module, "EVICT_AFTER_MS", 200)
    monkeypatch.setattr(door_module, "PERIOD_S", 0.05)
    with running_daemon(
        tmp_path,
        daemon={"listen": ["127.0.0.1:0"], "max_connections": 40, "max_connections_per_peer": 20},
    ) as d:
        host, port = d.servers.bound[0].rsplit(":", 1)
        flood: list[socket.socket] = []
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            with contextlib.suppress(OSError):
                flood.append(
                    socket.create_connection(
                        (host, int(port)), timeout=0.02, source_address=("127.0.0.2", 0)
                    )
                )
        assert len(flood) > 40  # more than the places: the first ones took them all
        assert d.servers.door.held == {"127.0.0.2"}
        deadline = time.monotonic() + 3
        while d.servers.door.evicted == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert d.servers.door.evicted > 0  # its silent ones, past EVICT_AFTER_MS
        ch = grpc.insecure_channel(
            d.servers.bound[0], options=[("grpc.use_local_subchannel_pool", 1)]
        )
        status = pb_grpc.ProvingEngineStub(ch).GetStatus(pb.GetStatusRequest(), timeout=5)
        assert status.uptime_seconds >= 0
        ch.close()
        for s in flood:
            s.close()
