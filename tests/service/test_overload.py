"""Issue 15's overload cases, re-run over gRPC: each gets a clear error naming its limit,
and the daemon serves others throughout."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from daemon_harness import running_daemon

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.kinds import demo
from cuzk.service.proto import proving_pb2 as pb

SMALL = DemoCircuit(rounds=20, words=1)


def demo_request(priority: int = pb.HIGH, pad: int = 0) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(
        proof_kind=pb.CUZK_DEMO,
        priority=priority,
        vanilla_proof=demo.make_vanilla(SMALL) + b" " * pad,
    )


def refused(call, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as ei:
        call(*args)
    return ei.value


def test_eight_requests_padded_with_100_mib_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    with running_daemon(tmp_path) as d:
        c = d.client()
        for _ in range(8):
            e = refused(c.submit, demo_request(pad=100 << 20))
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "demo vanilla proof: 104857" in e.details()
            assert "a demo request is at most 1048576" in e.details()
        assert c.prove(demo_request()).status == pb.AwaitProofResponse.COMPLETED
        assert len(d.engine.registry.all()) == 1
        assert d.engine.admission.pending() == (0, 0)
    journal = tmp_path / "journal.sqlite"
    assert journal.stat().st_size < 1 << 20


def test_admission_limits_are_resource_exhausted_naming_them(tmp_path: Path) -> None:
    with running_daemon(
        tmp_path,
        admission={"max_pending_jobs_per_kind": 3, "max_pending_bytes": "64KiB"},
        # NORMAL demo jobs wait in the batch collector: they stay pending
        scheduler={"max_batch_size": 64, "max_batch_wait_ms": 600_000},
    ) as d:
        c = d.client()
        held = [c.submit(demo_request(pb.NORMAL)).job_id for _ in range(3)]
        e = refused(c.submit, demo_request(pb.NORMAL))
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "[admission] max_pending_jobs_per_kind = 3" in e.details()
        e = refused(
            c.submit, pb.SubmitProofRequest(proof_kind=pb.WINNING_POST, randomness=b"x" * 70_000)
        )
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "[admission] max_pending_bytes = 64.0 KiB" in e.details()
        # the daemon serves on: status, metrics, cancel, and a proof once there is room
        assert c.status().queues[0].pending == 3
        assert 'cuzk_requests_rejected_total{reason="admission"} 2.0' in c.metrics()
        c.cancel(held[0])
        assert c.prove(demo_request()).status == pb.AwaitProofResponse.COMPLETED
        for job_id in held[1:]:
            c.cancel(job_id)
