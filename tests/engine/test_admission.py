"""Admission (issue 15): limits on pending jobs and pending request bytes, per kind and in
total, refused with the limit named; what a finished job held is given back."""

from __future__ import annotations

import threading
import time
import weakref
from pathlib import Path

import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine import engine as engine_module
from cuzk.engine.admission import (
    PARSE_EXPANSION,
    TRIM_AFTER_BYTES,
    ParseGate,
    return_memory,
)
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import Job, JobState, ProofKind, ProofRequest
from cuzk.engine.journal import Journal
from cuzk.engine.kinds import KindRegistry, demo
from cuzk.errors import InputError, ResourceError

C = DemoCircuit(rounds=20, words=1)


class Winning(demo.DemoKind):
    """A second kind (the demo circuit under WinningPoSt's kind) to see limits per kind."""

    kind = ProofKind.WINNING_POST


def config(tmp_path: Path, **admission: object) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"backend": "cpu"},
        # NORMAL demo jobs wait in the batch collector: they stay pending
        scheduler={"max_batch_size": 64, "max_batch_wait_ms": 600_000},
        admission=admission,
    )


def engine(tmp_path: Path, **admission: object) -> Engine:
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    reg.register(Winning())
    e = Engine(config(tmp_path, **admission), kinds=reg)
    e.start()
    return e


def held(request_id: str = "", pad: int = 0) -> ProofRequest:
    """A demo request that waits in the batch collector; ``pad`` bytes of whitespace."""
    body = demo.make_vanilla(C, 1) + b" " * pad
    return ProofRequest(ProofKind.DEMO, request_id=request_id, vanilla_proof=body)


def winning() -> ProofRequest:
    return ProofRequest(
        ProofKind.WINNING_POST,
        vanilla_proof=demo.make_vanilla(C, 1),
        vanilla_proofs=(b"v",),
        randomness=bytes(32),
    )


def test_pending_jobs_per_kind_and_in_total(tmp_path: Path) -> None:
    e = engine(tmp_path, max_pending_jobs_per_kind=2, max_pending_jobs=3)
    try:
        a, b = e.submit(held("a")).job_id, e.submit(held("b")).job_id
        with pytest.raises(ResourceError) as ei:
            e.submit(held("c"))
        message = str(ei.value)
        assert "[admission] max_pending_jobs_per_kind = 2" in message
        assert "demo has 2 pending" in message
        # another kind is still admitted: one kind cannot starve the others
        w = e.submit(winning()).job_id
        with pytest.raises(ResourceError, match=r"\[admission\] max_pending_jobs = 3 .*3 pending"):
            e.submit(winning())
        assert e.admission.pending()[0] == 3
        # a job that ends gives its place back
        e.cancel(b)
        assert e.submit(held("c")).job_id == "c"
        assert {j.job_id for j in e.registry.all()} == {a, b, "c", w}
        assert e.metrics.rejected.labels("admission")._value.get() == 2
    finally:
        e.stop()


def test_pending_bytes_per_kind_and_in_total(tmp_path: Path) -> None:
    e = engine(tmp_path, max_pending_bytes_per_kind="40KiB", max_pending_bytes="64KiB")
    try:
        first = e.submit(held("first", pad=30_000)).job_id
        with pytest.raises(ResourceError) as ei:
            e.submit(held("second", pad=30_000))
        message = str(ei.value)
        assert "[admission] max_pending_bytes_per_kind = 40.0 KiB" in message
        assert "this request" in message and "demo" in message
        e.cancel(first)
        assert e.submit(held("second", pad=30_000)).job_id == "second"
        status = e.status().admission
        assert status["pending_jobs"] == 1
        assert 30_000 < status["pending_bytes"] < 40 * 1024
        assert status["by_kind"]["demo"]["jobs"] == 1
        assert status["limits"]["max_pending_bytes"] == 64 * 1024
        text = e.metrics_text()
        assert 'cuzk_admission_pending{proof_kind="demo",what="jobs"} 1.0' in text
        assert 'cuzk_admission_limit{limit="max_pending_bytes"} 65536.0' in text
        assert 'cuzk_requests_rejected_total{reason="admission"} 1.0' in text
    finally:
        e.stop()


def test_a_retry_of_an_accepted_request_is_answered_when_full(tmp_path: Path) -> None:
    e = engine(tmp_path, max_pending_jobs=1)
    try:
        req = held("only")
        assert e.submit(req).job_id == "only"
        res = e.submit(req)  # identical: answered by its job, not refused
        assert res.job_id == "only" and res.existing
        with pytest.raises(ResourceError, match="max_pending_jobs = 1"):
            e.submit(held("another"))
    finally:
        e.stop()


def test_journalled_jobs_are_resumed_even_beyond_the_limits(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite")
    for i in range(4):
        r = held(f"old-{i}")
        j.insert(Job(r.request_id, r, r.effective_priority(), time.time(), r.digest()))
    j.close()
    e = engine(tmp_path, max_pending_jobs=2)
    try:
        # accepted before the restart: all four resumed, none refused
        assert {j.job_id for j in e.registry.all()} == {f"old-{i}" for i in range(4)}
        assert all(j.state == JobState.QUEUED for j in e.registry.all())
        assert e.admission.pending()[0] == 4
        with pytest.raises(ResourceError, match="max_pending_jobs = 2"):
            e.submit(held("new"))
        for i in range(3):
            e.cancel(f"old-{i}")
        assert e.submit(held("new")).job_id == "new"
    finally:
        e.stop()


class SlowDemo(demo.DemoKind):
    """The demo kind with a parse that waits for the test's word."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Semaphore(0)
        self.go = threading.Event()

    def parse(self, request: ProofRequest):  # type: ignore[no-untyped-def]
        self.entered.release()
        self.go.wait(10)
        return super().parse(request)


def test_requests_being_parsed_are_counted_before_their_parse(tmp_path: Path) -> None:
    """Issue 32: parsing was not bounded by admission (16 bodies parsed at once each
    passed the check made before any of them was counted). Now a request is counted
    from before its parse: the second of two concurrent ones is refused at once."""
    reg = KindRegistry()
    slow = SlowDemo()
    reg.register(slow)
    e = Engine(config(tmp_path, max_pending_jobs_per_kind=1), kinds=reg)
    e.start()
    try:
        slow.go.set()
        with pytest.raises(InputError, match="not valid JSON"):  # gives its hold back
            e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=b"bad"))
        assert e.admission.pending() == (0, 0)
        slow.go.clear()
        first = threading.Thread(target=e.submit, args=(held("a"),))
        first.start()
        assert slow.entered.acquire(timeout=5)  # the first is being parsed
        assert e.admission.pending()[0] == 1
        with pytest.raises(ResourceError, match="max_pending_jobs_per_kind = 1"):
            e.submit(held("b"))
        slow.go.set()
        first.join(5)
        assert e.registry.get("a").state == JobState.QUEUED
        assert e.admission.pending()[0] == 1  # the ticket became the job's
    finally:
        slow.go.set()
        e.stop()


def test_the_parse_gate_lets_bodies_through_within_its_room() -> None:
    gate = ParseGate(limit=PARSE_EXPANSION * 100, wait_s=0.2)
    assert gate.cost(10) == PARSE_EXPANSION * 10
    assert gate.cost(10**9) == gate.limit  # one request alone always fits
    with gate.parsing(60):
        with gate.parsing(40):
            assert gate.held == gate.limit
            t0 = time.monotonic()
            with pytest.raises(ResourceError, match="max_parsing_bytes"), gate.parsing(1):
                pass
            assert 0.15 < time.monotonic() - t0 < 2
        assert gate.held == PARSE_EXPANSION * 60  # the refused one took nothing
    assert gate.held == 0


def test_a_waiting_parse_goes_on_when_room_is_freed() -> None:
    gate = ParseGate(limit=PARSE_EXPANSION * 10, wait_s=5)
    order: list[str] = []
    inside = threading.Event()

    def holder() -> None:
        with gate.parsing(10):
            inside.set()
            time.sleep(0.1)
            order.append("first done")

    t = threading.Thread(target=holder)
    t.start()
    inside.wait(5)
    with gate.parsing(10):
        order.append("second in")
    t.join()
    assert order == ["first done", "second in"]


def test_return_memory_is_safe_to_call() -> None:
    return_memory(0)  # small bodies: nothing done
    return_memory(TRIM_AFTER_BYTES)  # glibc's malloc_trim where there is one


class Holder:
    """A decoded document (weakly referable)."""


class Refusing(demo.DemoKind):
    """The demo kind with a parse that decodes a document, then refuses the request."""

    def __init__(self) -> None:
        super().__init__()
        self.decoded: list[weakref.ref[Holder]] = []

    def parse(self, request: ProofRequest):  # type: ignore[no-untyped-def]
        document = Holder()
        self.decoded.append(weakref.ref(document))
        raise InputError("body", "field", "refused after decoding")


def test_a_refused_bodys_parse_lets_go_of_its_memory(tmp_path: Path, monkeypatch) -> None:
    """Issue 32: 16 invalid 100 MiB bodies, three rounds, left 3.0 / 4.2 / 5.9 GiB behind.
    What a refused parse decoded is freed when it is refused, even while its error is
    still held (a pool's future, a log record keep the raising frames' locals), and the
    heap's free pages go back to the system after a large body (python -m
    cuzk.bench.hardening bodies measures the RSS)."""
    trimmed: list[int] = []
    monkeypatch.setattr(engine_module, "return_memory", trimmed.append)
    reg = KindRegistry()
    kind = Refusing()
    reg.register(kind)
    e = Engine(config(tmp_path), kinds=reg)
    e.start()
    try:
        big = held(pad=2 << 20)
        with pytest.raises(InputError, match="refused after decoding") as ei:
            e.submit(big)
        assert ei.value.__traceback__ is not None  # the error is still held here
        assert kind.decoded[0]() is None  # and what the parse decoded is gone
        assert trimmed == [len(big.vanilla_proof)]
        assert e.admission.pending() == (0, 0)
        assert e.parse_gate.held == 0
    finally:
        e.stop()


def test_malloc_arenas_are_limited_unless_the_environment_says(monkeypatch) -> None:
    """Memory freed in one glibc arena is not reused by another: the daemon keeps
    two, so that refused bodies parsed on different threads leave no growing heap."""
    import ctypes.util

    from cuzk.engine.admission import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False  # the operator's setting stands
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    glibc = ctypes.util.find_library("c") is not None
    assert limit_malloc_arenas() is glibc
