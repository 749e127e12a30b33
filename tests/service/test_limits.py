"""Connections, descriptors and malformed frames (issue 32, items 3 and 7): a flood of
connections is refused at the door within the descriptors the daemon keeps for its own
files, one host's calls are held to a number of connections, a frame that is not
protobuf is INVALID_ARGUMENT without a traceback, and the lines about it are few."""

from __future__ import annotations

import logging
import resource
import socket
import threading
import time
from pathlib import Path

import grpc
import pytest
from daemon_harness import running_daemon

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.kinds import demo
from cuzk.engine.ratelog import RateLimitedLog
from cuzk.errors import InputError
from cuzk.service.limits import (
    FD_RESERVE,
    PeerConnections,
    connection_budget,
    peer_host,
    raise_fd_limit,
)
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc

LOCAL = [("grpc.use_local_subchannel_pool", 1)]  # a fresh connection, not a shared one


def stub(addr: str) -> tuple[grpc.Channel, pb_grpc.ProvingEngineStub]:
    ch = grpc.insecure_channel(addr, options=LOCAL)
    return ch, pb_grpc.ProvingEngineStub(ch)


def test_descriptors_and_the_connection_budget() -> None:
    soft = raise_fd_limit()
    assert soft == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert hard == resource.RLIM_INFINITY or soft == min(hard, 1 << 20)
    # 20,000 descriptors (the attack's machine): 4,096 connections, two listeners share them
    assert connection_budget(4096, 1, fd_limit=20_000) == 4096
    assert connection_budget(4096, 2, fd_limit=20_000) == 2048
    # few descriptors: the reserve for the daemon's own files comes first
    assert connection_budget(4096, 1, fd_limit=1024) == 1024 - FD_RESERVE
    assert connection_budget(4096, 1, fd_limit=100) == 16


def test_peers_are_told_apart_by_host_and_connection() -> None:
    assert peer_host("ipv4:10.0.0.1:5000") == ("10.0.0.1", "5000")
    assert peer_host("ipv6:[::1]:5000") == ("::1", "5000")
    assert peer_host("unix:/run/cuzk.sock") is None
    peers = PeerConnections(per_peer=2)
    assert peers.enter("ipv4:10.0.0.1:1") and peers.enter("ipv4:10.0.0.1:1")  # one connection
    assert peers.enter("ipv4:10.0.0.1:2")
    assert not peers.enter("ipv4:10.0.0.1:3")  # a third connection of that host
    assert peers.enter("ipv4:10.0.0.2:3")  # another host
    assert peers.enter("unix:")  # unix sockets are not limited
    peers.leave("ipv4:10.0.0.1:2")
    assert peers.enter("ipv4:10.0.0.1:3")
    assert peers.connections("10.0.0.1") == 2


def test_rate_limited_lines(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    rl = RateLimitedLog(logging.getLogger("t"), per_minute=3, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "t"):
        written = sum(rl.warning("k", "full %d", i) for i in range(1000))
        assert written == 3
        assert rl.warning("other", "another kind of line")  # each key its own budget
        now[0] = 20.0  # a third of a minute refills one line
        assert rl.warning("k", "full again")
    assert len(caplog.records) == 5
    assert caplog.records[-1].getMessage() == "full again (997 similar line(s) left out)"


def test_malformed_frames_are_invalid_argument_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO), running_daemon(tmp_path) as d:
        ch = grpc.insecure_channel(d.servers.bound[0])
        for method in ("SubmitProof", "AwaitProof", "CancelProof", "PreloadSRS", "GetStatus"):
            raw = ch.unary_unary(f"/cuzk.v1.ProvingEngine/{method}")
            for frame in (b"\xff\xff\xff\x07", b"\x0a\x80", b"\x12\xff\xff\xff\xff\x0f"):
                with pytest.raises(grpc.RpcError) as ei:
                    raw(frame, timeout=10)
                assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
                assert f"{method}: the request is not a valid protobuf" in ei.value.details()
        status = pb_grpc.ProvingEngineStub(ch).GetStatus(pb.GetStatusRequest(), timeout=10)
        assert status.uptime_seconds >= 0  # serving on
        ch.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert d.servers.gate.malformed == 15


def test_a_connection_flood_is_refused_at_the_door_and_room_comes_back(tmp_path: Path) -> None:
    """Issue 32: 21,000 idle connections took the 20,000 descriptors. Now the listeners
    take at most max_connections (scaled down: 3, held by 10 sockets)."""
    with running_daemon(tmp_path, daemon={"listen": ["127.0.0.1:0"], "max_connections": 3}) as d:
        host, port = d.servers.bound[0].rsplit(":", 1)
        flood = [socket.create_connection((host, int(port))) for _ in range(10)]
        time.sleep(0.3)
        ch, s = stub(d.servers.bound[0])
        with pytest.raises(grpc.RpcError) as ei:
            s.GetStatus(pb.GetStatusRequest(), timeout=3)
        assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
        ch.close()
        for sock in flood:
            sock.close()
        time.sleep(0.3)
        ch, s = stub(d.servers.bound[0])
        assert s.GetStatus(pb.GetStatusRequest(), timeout=10).uptime_seconds >= 0
        ch.close()


def test_one_host_holds_calls_on_a_bounded_number_of_connections(tmp_path: Path) -> None:
    body = demo.make_vanilla(DemoCircuit(rounds=20, words=1), 1)
    with running_daemon(
        tmp_path,
        daemon={"listen": ["127.0.0.1:0"], "max_connections_per_peer": 2},
        scheduler={"max_batch_size": 64, "max_batch_wait_ms": 600_000},  # the job waits
    ) as d:
        addr = d.servers.bound[0]
        ch0, s0 = stub(addr)
        job = s0.SubmitProof(
            pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, vanilla_proof=body), timeout=30
        ).job_id
        channels = [stub(addr) for _ in range(2)]
        waiters = [
            threading.Thread(
                target=s.AwaitProof,
                args=(pb.AwaitProofRequest(job_id=job, timeout_ms=3000),),
                kwargs={"timeout": 30},
            )
            for _, s in channels
        ]
        for w in waiters:
            w.start()
        time.sleep(0.5)  # both parked, on two connections of 127.0.0.1
        with pytest.raises(grpc.RpcError) as ei:
            s0.GetStatus(pb.GetStatusRequest(), timeout=10)
        assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "max_connections_per_peer" in ei.value.details()
        for w in waiters:
            w.join(30)
        assert s0.GetStatus(pb.GetStatusRequest(), timeout=10).uptime_seconds >= 0
        for ch, _ in [*channels, (ch0, s0)]:
            ch.close()


def test_preload_and_evict_of_an_absurd_id_are_invalid_argument(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 32: a 4,400-digit id gave INTERNAL "File name too long"; it is refused by
    its length, and the answer does not echo it whole."""
    with caplog.at_level(logging.INFO), running_daemon(tmp_path) as d:
        ch, s = stub(d.servers.bound[0])
        for cid in ("9" * 4400, "demo-r" + "1" * 4400 + "-w1", "porep\n32g", ""):
            for call, req in (
                (s.PreloadSRS, pb.PreloadSrsRequest(circuit_id=cid)),
                (s.EvictSRS, pb.EvictSrsRequest(circuit_id=cid)),
            ):
                with pytest.raises(grpc.RpcError) as ei:
                    call(req, timeout=10)
                assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, cid[:20]
                assert len(ei.value.details()) < 300
        with pytest.raises(InputError, match="4400 characters, at most 128"):
            d.engine.preload("9" * 4400)
        ch.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
