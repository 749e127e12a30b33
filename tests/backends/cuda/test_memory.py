"""The per-device VRAM budget (pure Python: no GPU needed)."""

from __future__ import annotations

import threading

import pytest

from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.errors import ResourceError


def test_reserve_and_release():
    b = DeviceBudget(0, 100)
    with b.reserve(60, "ntt"):
        assert b.reserved_bytes == 60 and b.free_bytes == 40
        with pytest.raises(ResourceError, match="h_poly needs"), b.reserve(50, "h_poly"):
            pass
        assert b.reserved_bytes == 60
    assert b.reserved_bytes == 0
    assert b.peak_by_operation == {"ntt": 60}


def test_never_fits_raises_even_when_waiting():
    b = DeviceBudget(1, 100)
    with pytest.raises(ResourceError, match="device budget is"), b.reserve(101, "msm", wait=True):
        pass


def test_hold_outlives_scope_and_releases_once():
    b = DeviceBudget(0, 100)
    h = b.acquire(70, "table")
    assert b.reserved_bytes == 70
    h.release()
    h.release()
    assert b.reserved_bytes == 0


def test_waiting_reservation_proceeds_after_release():
    b = DeviceBudget(0, 100)
    h = b.acquire(80, "first")
    entered = threading.Event()

    def second():
        with b.reserve(50, "second", wait=True):
            entered.set()

    t = threading.Thread(target=second)
    t.start()
    assert not entered.wait(0.1)
    h.release()
    t.join(5)
    assert entered.is_set() and b.reserved_bytes == 0


def test_envelope_lends_its_bytes_to_the_work_inside():
    b = DeviceBudget(0, 100)
    outer = b.acquire(60, "key")
    assert b.free_bytes == 40
    with b.drawing_from(outer):
        assert b.free_bytes == 100  # the envelope's 60 are this thread's to use
        inner = b.acquire(40, "bases")  # out of the key's 60: nothing new reserved
        assert b.reserved_bytes == 60 and outer.lent == 40 and b.free_bytes == 60
        with b.reserve(30, "csr"):  # 20 left in the envelope, 10 from the free budget
            assert b.reserved_bytes == 70
            assert b.overdrawn_by_operation == {"key": 10}
        assert b.reserved_bytes == 60 and outer.lent == 40
    # another thread, or this one outside the scope, reserves from the free budget
    seen = []
    t = threading.Thread(target=lambda: seen.append(b.acquire(30, "other")))
    with b.drawing_from(outer):
        t.start()
        t.join(5)
    assert b.reserved_bytes == 90 and outer.lent == 40
    seen[0].release()
    # releasing the envelope keeps what its inner hold still uses
    outer.release()
    assert b.reserved_bytes == 40
    inner.release()
    inner.release()
    assert b.reserved_bytes == 0


def test_envelope_of_another_device_is_refused():
    a, other = DeviceBudget(0, 100), DeviceBudget(1, 100)
    h = other.acquire(10, "key")
    with pytest.raises(ValueError, match="GPU 1"), a.drawing_from(h):
        pass


def test_released_envelope_no_longer_lends():
    b = DeviceBudget(0, 100)
    outer = b.acquire(50, "partition")
    with b.drawing_from(outer):
        outer.release()
        with b.reserve(50, "msm"):
            assert b.reserved_bytes == 50  # from the free budget: the envelope is gone
    assert b.reserved_bytes == 0


def test_an_overdraw_report_names_what_the_envelope_lent(caplog):
    """The first overdraw of an envelope is logged with the envelope's size and
    what its live inner holds take, by operation, so one line of a GPU run's log
    says which estimate fell short."""
    b = DeviceBudget(0, 1 << 40)
    key = b.acquire(10 << 30, "key porep-32g")
    with b.drawing_from(key):
        bases = [b.acquire(3 << 30, "G1 bases (resident)") for _ in range(2)]
        gone = b.acquire(1 << 30, "staging")
        gone.release()  # a released hold is no longer lent
        with (
            caplog.at_level("WARNING", logger="cuzk.backends.cuda.memory"),
            b.reserve(2 << 30, "CSR upload"),
        ):
            csr = b.acquire(3 << 30, "CSR 5 x 5")
    (line,) = [r.getMessage() for r in caplog.records]
    assert "CSR 5 x 5 needs 1.000 GiB beyond the key porep-32g reservation of 10.000 GiB" in line
    lent = "G1 bases (resident) 6.000 GiB (2 holds), CSR upload 2.000 GiB"
    assert line.endswith(f"it has lent: {lent}")
    assert key.ledger() == "G1 bases (resident) 6.000 GiB (2 holds), CSR 5 x 5 3.000 GiB"
    for h in (*bases, csr):
        h.release()
    assert key.ledger() == "nothing" and key.lent == 0


def test_an_overdraw_that_grows_is_logged_again(caplog):
    """Each envelope's overdraw is logged when first seen and again when it grows
    by half and 64 MiB (a run's largest overdraw then always has its log line),
    not for every hold beyond it."""
    b = DeviceBudget(0, 1 << 40)
    share = b.acquire(1 << 30, "partition porep-32g witness")
    with caplog.at_level("WARNING", logger="cuzk.backends.cuda.memory"), b.drawing_from(share):
        held = [b.acquire(n, f"hold {i}") for i, n in enumerate((1 << 30, 1 << 20, 1 << 20))]
        held.append(b.acquire(4 << 30, "witness wave"))
        held.append(b.acquire(5 << 30, "witness wave"))  # not half as much again
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("GPU 0: hold 1 needs 0.001 GiB beyond the partition porep-32g")
    assert lines[1].startswith("GPU 0: witness wave needs 4.000 GiB beyond")
    assert b.overdrawn_by_operation == {"partition porep-32g witness": 5 << 30}
    for h in (*held, share):
        h.release()
    assert b.reserved_bytes == 0


class _FakePool:
    """A pool at its limit that holds ``cached`` bytes of another stream's blocks."""

    def __init__(self, cached: int) -> None:
        self.cached, self.freed, self.calls = cached, 0, 0

    def malloc(self, size: int):
        self.calls += 1
        if self.cached:
            raise _FakeOom(size)
        return ("block", size)

    def free_bytes(self) -> int:
        return self.cached

    def free_all_blocks(self) -> None:
        self.freed += self.cached
        self.cached = 0


class _FakeOom(MemoryError):
    pass


def _fake_cupy(monkeypatch, pool: _FakePool):
    import sys
    import types

    cp = types.ModuleType("cupy")
    cp.get_default_memory_pool = lambda: pool
    cp.cuda = types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=_FakeOom))
    monkeypatch.setitem(sys.modules, "cupy", cp)


def test_allocation_at_the_limit_releases_other_streams_cached_blocks(monkeypatch):
    from cuzk.backends.cuda import memory
    from cuzk.backends.cuda.memory import releasing_malloc

    pool = _FakePool(cached=3 << 30)
    _fake_cupy(monkeypatch, pool)
    before = memory.pool_releases
    assert releasing_malloc(1 << 30) == ("block", 1 << 30)
    assert pool.freed == 3 << 30 and pool.calls == 2
    assert memory.pool_releases == before + 1  # counted (and logged at powers of two)


def test_allocation_beyond_the_limit_with_nothing_cached_still_fails(monkeypatch):
    from cuzk.backends.cuda.memory import releasing_malloc

    class Full(_FakePool):
        def malloc(self, size: int):
            self.calls += 1
            raise _FakeOom(size)

    pool = Full(cached=0)
    _fake_cupy(monkeypatch, pool)
    with pytest.raises(_FakeOom):
        releasing_malloc(1 << 30)
    assert pool.calls == 1 and pool.freed == 0


def test_a_cap_bounds_what_the_thread_is_told_until_lifted():
    from cuzk.backends.cuda.memory import Cap

    b = DeviceBudget(0, 100)
    cap = Cap(30)
    with b.capped(cap):
        assert b.free_bytes == 30
        with b.reserve(50, "not refused by the cap"):  # the cap only guides sizing
            assert b.free_bytes == 30 and b.reserved_bytes == 50
            told = []
            other = threading.Thread(target=lambda: told.append(b.free_bytes))
            other.start()
            other.join()
            assert told == [50]  # another thread is not capped
        cap.lift()
        assert b.free_bytes == 100
        assert b.await_lift() is False  # lifted: nothing to wait for
    assert b.free_bytes == 100


def test_await_lift_waits_for_the_cap_to_lift():
    from cuzk.backends.cuda.memory import Cap

    b = DeviceBudget(0, 100)
    cap = Cap(30)
    sized = []

    def side():
        with b.capped(cap):
            assert b.await_lift() is True
            sized.append(b.free_bytes)

    t = threading.Thread(target=side)
    t.start()
    t.join(0.1)
    assert t.is_alive() and not sized  # waiting for its full share
    cap.lift()
    t.join(5)
    assert sized == [100]


def test_two_threads_draw_from_one_envelope():
    b = DeviceBudget(0, 100)
    outer = b.acquire(60, "partition")
    taken = threading.Barrier(2)
    inner = []

    def draw():
        with b.drawing_from(outer), b.reserve(25, "msm"):
            inner.append(b.reserved_bytes)
            taken.wait(5)

    threads = [threading.Thread(target=draw) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert inner == [60, 60]  # both inside the envelope: nothing beyond it
    assert outer.lent == 0 and b.overdrawn_by_operation == {}
    outer.release()
    assert b.reserved_bytes == 0
