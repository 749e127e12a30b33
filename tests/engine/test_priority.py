"""Time-critical proofs first: a CRITICAL job goes ahead of queued PoRep
partitions at once (its own synthesis and GPU workers, past the queue's
capacity), reserves from a VRAM slice that other work may not take, and its
keys are never evicted for PoRep."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from gpu_stand_ins import GATE_TIMEOUT_S, StandInGpu, circuit_bytes, wait_for

from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.budget import Budget
from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, Priority, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import ParsedRequest

POREP = DemoCircuit(rounds=24, words=1)  # stands in for PoRep: its proofs held at a gate
WINNING = DemoCircuit(rounds=5, words=1)  # stands in for WinningPoSt


class GatedByCircuit(StandInGpu):
    """A stand-in GPU whose gate holds the proofs of one circuit only (those with
    ``rows`` constraints), counting the proofs waiting there."""

    def __init__(self, vram: DeviceBudget, rows: int) -> None:
        super().__init__(vram)
        self.rows = rows
        self.waiting = 0

    def spmv(self, m, w, rows=None):
        if m.inner.num_rows == self.rows:
            with self._lock:
                self.waiting += 1
            try:
                assert self.gate.wait(GATE_TIMEOUT_S), "the test never opened the gate"
            finally:
                with self._lock:
                    self.waiting -= 1
        return super(StandInGpu, self).spmv(m, w, rows)


def config(tmp_path: Path, **gpus: object) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"gpu_workers_per_device": 2, **gpus},
        scheduler={"max_batch_size": 4, "max_batch_wait_ms": 1},
        pipeline={"synthesis_concurrency": 2, "synthesis_lookahead": 1},
    )


def test_a_critical_job_behind_a_queue_of_porep_partitions_finishes_first(tmp_path: Path):
    porep_cid = demo.circuit_id(POREP.rounds, POREP.words)
    rows = demo.DemoKind().r1cs(porep_cid).num_constraints
    limit = 1 << 30
    vram = DeviceBudget(0, limit)
    be = GatedByCircuit(vram, rows)
    dev = Device(0, "stand-in GPU 0", be, limit, Budget("vram:0", limit, vram))
    be.gate.clear()
    e = Engine(config(tmp_path), devices=[dev])
    e.start()
    try:
        porep = e.submit(
            ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(POREP, 8))
        ).job_id
        # both GPU workers hold a PoRep partition at the gate, more are queued
        wait_for(lambda: be.waiting == 2, "two PoRep partitions proving")
        wait_for(lambda: len(e.pipeline.synthesized) >= 1, "a PoRep partition queued for a GPU")
        winning = e.submit(
            ProofRequest(
                ProofKind.DEMO,
                priority=Priority.CRITICAL,
                vanilla_proof=demo.make_vanilla(WINNING, 1),
            )
        ).job_id
        job, timed_out = e.await_job(winning, 60)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert (
            not e.registry.get(porep).finished and be.waiting == 2
        )  # PoRep still held at the gate
        # the time-critical partition's working set is kept for such work from now on
        win_cid = demo.circuit_id(WINNING.rounds, WINNING.words)
        _, partition = circuit_bytes(win_cid)
        assert dev.budget.kept >= partition > 0
        (line,) = [
            x
            for x in e.metrics_text().splitlines()
            if x.startswith('cuzk_memory_kept_bytes{budget="vram:0"} ')
        ]
        assert float(line.split()[-1]) == dev.budget.kept
        be.gate.set()
        job, timed_out = e.await_job(porep, 120)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert e.registry.get(winning).finished_at < job.finished_at
    finally:
        be.gate.set()
        e.stop()


def test_other_work_leaves_the_kept_slice_to_time_critical_work() -> None:
    from cuzk.engine.budget import time_critical

    b = Budget("vram:0", 100, kept=30)
    (first,) = b.try_reserve([(50, "porep partition")])
    assert b.try_reserve([(21, "porep partition")]) is None  # it would reach into the slice
    (second,) = b.try_reserve([(20, "porep partition")])
    with time_critical():
        (win,) = b.try_reserve([(30, "winning partition")])
    assert b.reserved == 100 and b.snapshot()["kept_bytes"] == 30
    for r in (win, first, second):
        r.release()
    # a reservation that could never fit beside the slice may take it, rather
    # than wait for ever (with a warning naming the key)
    (big,) = b.try_reserve([(90, "porep key + partition")])
    big.release()
    b.keep(80)
    assert b.kept == 50  # at most half the budget


def test_time_critical_work_never_waits_for_porep_s_memory(tmp_path: Path) -> None:
    """A fixed slice ([gpus] time_critical_vram): PoRep partitions fill the rest of
    the budget and wait; a WinningPoSt partition reserves from the slice at once."""
    threads: list[threading.Thread] = []
    limit = 64 << 20
    b = Budget("vram:0", limit, kept=8 << 20)
    (held,) = b.reserve([(limit - (8 << 20), "porep partitions")])
    waited = threading.Event()

    def porep() -> None:
        (r,) = b.reserve([(1 << 20, "porep partition")], poll_s=0.01)
        waited.set()
        r.release()

    threads.append(threading.Thread(target=porep))
    threads[0].start()
    from cuzk.engine.budget import time_critical

    with time_critical():
        (win,) = b.reserve([(8 << 20, "winning partition")])
    assert not waited.is_set()  # PoRep still waits; WinningPoSt did not
    win.release()
    held.release()
    threads[0].join(5)
    assert waited.is_set()


class FakeWinning(demo.DemoKind):
    """WinningPoSt's place (CRITICAL by default) with a small demo circuit."""

    kind = ProofKind.WINNING_POST

    def owns(self, cid: str) -> bool:
        return cid == "winning-test"

    def _circuit(self, cid: str) -> DemoCircuit:
        return WINNING

    def parse(self, request: ProofRequest) -> ParsedRequest:
        return ParsedRequest("winning-test", super().parse(request).partitions)


def test_keys_load_at_start_time_critical_first_and_a_bad_one_is_named(tmp_path: Path):
    from cuzk.engine.kinds import KindRegistry

    porep_cid = demo.circuit_id(POREP.rounds, POREP.words)
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    reg.register(FakeWinning())
    cfg = config(tmp_path, backend="cpu").with_overrides(
        srs={
            "param_cache": str(tmp_path / "params"),
            "generate_dev_keys": True,
            "load_at_start": [porep_cid, "porep-3g", "winning-test"],
        }
    )
    e = Engine(cfg, kinds=reg)
    assert e.start_order(cfg.srs.load_at_start) == ["winning-test", porep_cid, "porep-3g"]
    e.start()
    try:
        wait_for(
            lambda: all(
                v != "queued" and v != "loading" for v in e.status().load_at_start.values()
            ),
            "the keys loaded at start",
        )
        got = e.status().to_json()["load_at_start"]
        assert got["winning-test"].startswith("loaded") and got[porep_cid].startswith("loaded")
        assert got["porep-3g"].startswith("failed: ") and "porep-3g" in got["porep-3g"]
        hot = {k.circuit_id for k in e.status().keys if k.tier.name == "HOT"}
        assert {"winning-test", porep_cid} <= hot
        assert e.status().to_json()["loading"] == []  # nothing under way any more
    finally:
        e.stop()


def test_a_load_under_way_is_in_status_until_it_ends() -> None:
    from cuzk.engine.keystore.progress import ProgressLog, under_way

    p = ProgressLog("loading winning-test into cuda:0")
    p(50, 200)
    (now,) = [u for u in under_way() if u["what"] == p.what]
    assert now["done_bytes"] == 50 and now["total_bytes"] == 200
    p(200, 200)
    assert not [u for u in under_way() if u["what"] == p.what]
    q = ProgressLog("loading a key that fails")
    q(1, 2)
    del q  # a failed load drops its log: it is no longer under way
    assert not [u for u in under_way() if u["what"] == "loading a key that fails"]


@pytest.mark.gpu
def test_on_a_gpu_a_critical_job_overtakes_a_porep_like_batch(tmp_path: Path) -> None:
    """The CUDA backend: a CRITICAL demo job submitted while a twelve-partition
    job of the largest demo circuit proves completes before that job, on the
    urgent stream, within the VRAM kept for it; nothing overdraws."""
    from cuzk.backends.cuda import CudaBackend
    from cuzk.backends.cuda.memory import DeviceContext

    limit = 4 << 30
    ctx = DeviceContext(0, limit_bytes=limit)
    dev = Device(0, "GPU 0", CudaBackend(ctx=ctx), limit, Budget("vram:0", limit, ctx.budget))
    e = Engine(config(tmp_path), devices=[dev])
    e.start()

    def critical() -> str:
        req = ProofRequest(
            ProofKind.DEMO, priority=Priority.CRITICAL, vanilla_proof=demo.make_vanilla(WINNING, 1)
        )
        return e.submit(req).job_id

    try:
        # its key, witness plan and kernels ready first, as a daemon keeps a
        # WinningPoSt's ([srs] load_at_start): on the H200 the first CRITICAL
        # job spent its time making its key while the whole batch was proven
        job, timed_out = e.await_job(critical(), 120)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        big = DemoCircuit(rounds=65536, words=256)
        porep = e.submit(
            ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(big, 12))
        ).job_id
        wait_for(
            lambda: any(w.job_id == porep for w in e.pipeline.workers if w.device is not None),
            "a partition of the batch on the GPU",
            timeout=300,
        )
        job, timed_out = e.await_job(critical(), 120)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert not e.registry.get(porep).finished
        assert dev.budget.kept > 0
        job, timed_out = e.await_job(porep, 600)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert ctx.budget.overdrawn_by_operation == {}, ctx.budget.overdrawn_by_operation
    finally:
        e.stop()


def test_a_winning_post_is_served_while_a_big_key_loads_at_start(tmp_path: Path) -> None:
    from cuzk.engine.kinds import KindRegistry

    porep_cid = demo.circuit_id(POREP.rounds, POREP.words)
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    reg.register(FakeWinning())
    cfg = config(tmp_path, backend="cpu").with_overrides(
        srs={
            "param_cache": str(tmp_path / "params"),
            "generate_dev_keys": True,
            "load_at_start": [porep_cid, "winning-test"],
        }
    )
    e = Engine(cfg, kinds=reg)
    loading = threading.Event()
    release = threading.Event()
    preload = e.preload

    def slow_preload(cid: str):
        if cid == porep_cid:  # the big key takes its time
            loading.set()
            assert release.wait(GATE_TIMEOUT_S)
        return preload(cid)

    e.preload = slow_preload  # type: ignore[method-assign]
    e.start()
    try:
        assert loading.wait(GATE_TIMEOUT_S)
        assert e.status().load_at_start["winning-test"].startswith("loaded")
        assert e.status().load_at_start[porep_cid] == "loading"
        req = ProofRequest(
            ProofKind.WINNING_POST,
            vanilla_proof=demo.make_vanilla(WINNING, 1),
            vanilla_proofs=(b"sector",),  # (the envelope's; the stand-in reads vanilla_proof)
            randomness=bytes(32),
        )
        job, timed_out = e.await_job(e.submit(req).job_id, 60)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert job.priority == Priority.CRITICAL
        assert e.status().load_at_start[porep_cid] == "loading"  # still
    finally:
        release.set()
        e.stop()


def test_preloading_a_winning_post_key_keeps_its_working_set(tmp_path: Path) -> None:
    """PreloadSRS (and [srs] load_at_start) of a WinningPoSt key sizes the VRAM kept
    for time-critical proofs ("auto"); a fixed [gpus] time_critical_vram stays."""
    from cuzk.engine.kinds import KindRegistry

    for setting, want in (("auto", None), ("1MiB", 1 << 20)):
        limit = 1 << 30
        vram = DeviceBudget(0, limit)
        dev = Device(0, "stand-in GPU 0", StandInGpu(vram), limit, Budget("vram:0", limit, vram))
        reg = KindRegistry()
        reg.register(demo.DemoKind())
        reg.register(FakeWinning())
        cfg = config(tmp_path / setting, time_critical_vram=setting).with_overrides(
            srs={"param_cache": str(tmp_path / "params"), "generate_dev_keys": True}
        )
        e = Engine(cfg, kinds=reg, devices=[dev])
        e.start()
        try:
            assert dev.budget.kept == (want or 0)
            e.preload("winning-test")
            res = e.keys.residency(e.keys.entry("winning-test"), dev)
            assert dev.budget.kept == (want or res.partition_device_bytes) > 0
        finally:
            e.stop()


class Gates(StandInGpu):
    """A stand-in GPU whose proofs of a circuit (by its constraint count) each
    take a permit of that circuit's semaphore (at their first sparse product,
    A·w), counting those waiting."""

    def __init__(self, vram: DeviceBudget, gates: dict[int, threading.Semaphore]) -> None:
        super().__init__(vram)
        self.gates = gates
        self.waiting: dict[int, int] = dict.fromkeys(gates, 0)
        self._products = threading.local()  # A, B, C: three products a proof

    def spmv(self, m, w, rows=None):
        n = getattr(self._products, "n", 0)
        self._products.n = n + 1
        gate = self.gates.get(m.inner.num_rows) if n % 3 == 0 else None
        if gate is not None:
            with self._lock:
                self.waiting[m.inner.num_rows] += 1
            try:
                assert gate.acquire(timeout=GATE_TIMEOUT_S), "the test never let it through"
            finally:
                with self._lock:
                    self.waiting[m.inner.num_rows] -= 1
        return super(StandInGpu, self).spmv(m, w, rows)


def test_a_worker_proving_a_batch_gives_its_rest_back_to_higher_priority_work(tmp_path):
    """The time-critical worker busy, a HIGH job queued behind a batch that the
    other worker proves is proven right after that worker's current partition:
    the rest of its batch goes back to the queue."""
    kind = demo.DemoKind()
    rows = {
        name: kind.r1cs(demo.circuit_id(c.rounds, c.words)).num_constraints
        for name, c in (("porep", POREP), ("winning", WINNING))
    }
    gates = {rows["porep"]: threading.Semaphore(0), rows["winning"]: threading.Semaphore(0)}
    limit = 1 << 30
    vram = DeviceBudget(0, limit)
    be = Gates(vram, gates)
    dev = Device(0, "stand-in GPU 0", be, limit, Budget("vram:0", limit, vram))
    cfg = config(tmp_path, gpu_workers_per_device=1).with_overrides(
        pipeline={"synthesis_concurrency": 2, "synthesis_lookahead": 4}
    )
    e = Engine(cfg, devices=[dev])
    e.start()
    (regular,) = [w for w in e.pipeline.workers if w.device is not None and not w.urgent]
    (urgent,) = [w for w in e.pipeline.workers if w.device is not None and w.urgent]

    def submit(circuit: DemoCircuit, n: int, priority: Priority) -> str:
        req = ProofRequest(
            ProofKind.DEMO, priority=priority, vanilla_proof=demo.make_vanilla(circuit, n)
        )
        return e.submit(req).job_id

    def done(job_id: str) -> int:
        return sum(1 for t in e.registry.get(job_id).trace.values() if t.state == "done")

    try:
        porep = submit(POREP, 8, Priority.NORMAL)
        wait_for(lambda: be.waiting[rows["porep"]] == 1, "the first PoRep partition proving")
        wait_for(lambda: len(e.pipeline.synthesized) >= 3, "PoRep partitions queued")
        critical = submit(WINNING, 1, Priority.CRITICAL)  # keeps the urgent worker busy
        wait_for(lambda: urgent.job_id == critical, "the urgent worker on the CRITICAL job")
        gates[rows["porep"]].release()  # the first PoRep partition finishes
        released = 1
        end = time.monotonic() + 60
        while not (regular.held >= 2 and be.waiting[rows["porep"]] == 1):
            # a batch of one at the gate (the worker's first take found two
            # partitions synthesized, or a take found one): let it through, once
            # the last one let through is proven; the next take is a batch
            if regular.held == 1 and be.waiting[rows["porep"]] == 1 and done(porep) == released:
                gates[rows["porep"]].release()
                released += 1
            assert time.monotonic() < end, "never happened: the regular worker proving a batch"
            time.sleep(0.01)
        wait_for(lambda: done(porep) == released, "the partitions let through proven")
        high = submit(DemoCircuit(rounds=10, words=1), 1, Priority.HIGH)
        wait_for(
            lambda: e.pipeline.synthesized.outranks(Priority.NORMAL), "the HIGH partition queued"
        )
        gates[rows["porep"]].release()  # the batch's current partition finishes
        job, timed_out = e.await_job(high, 30)
        assert not timed_out and job.state == JobState.COMPLETED, job.error
        assert done(porep) == released + 1  # the batch's current one, not the rest of it
    finally:
        for g in gates.values():
            for _ in range(16):
                g.release()
        e.stop()
