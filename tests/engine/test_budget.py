"""Budgets: all-or-nothing reservations, waiting, eviction, never above the limit."""

from __future__ import annotations

import random
import threading
import time

import pytest

from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.engine.budget import Budget, Cancelled
from cuzk.errors import ResourceError


def test_parts_are_reserved_together_or_not_at_all() -> None:
    b = Budget("host", 100)
    got = b.try_reserve([(60, "a"), (30, "b")])
    assert got is not None and b.reserved == 90
    assert b.try_reserve([(5, "c"), (10, "d")]) is None
    assert b.reserved == 90  # the part that would have fitted was not kept
    got[0].release()
    got[0].release()  # idempotent
    assert b.reserved == 30
    with got[1]:
        pass
    assert b.reserved == 0 and b.peak == 90


def test_more_than_the_budget_fails_at_once() -> None:
    b = Budget("host", 100)
    with pytest.raises(ResourceError, match="more than the whole budget"):
        b.reserve([(80, "key"), (30, "partition")])


def test_waits_until_released_then_proceeds() -> None:
    b = Budget("host", 100)
    (held,) = b.reserve([(70, "a")])
    got = []
    t = threading.Thread(target=lambda: got.extend(b.reserve([(50, "b")], poll_s=0.05)))
    t.start()
    time.sleep(0.15)
    assert not got and b.waits == 1
    held.release()
    t.join(2)
    assert got and b.reserved == 50


def evicting(idle_key, asked: list[int]):
    """An evictor that records each shortfall it is asked for and frees ``idle_key`` once."""

    def evict(shortfall: int) -> bool:
        asked.append(shortfall)
        if idle_key.released:
            return False
        idle_key.release()
        return True

    return evict


def test_evictor_is_asked_before_waiting() -> None:
    b = Budget("host", 100)
    (idle_key,) = b.reserve([(80, "idle key")])
    asked: list[int] = []
    (r,) = b.reserve([(40, "partition")], evict=evicting(idle_key, asked))
    assert asked == [20] and r.nbytes == 40 and b.reserved == 40


def test_cancelled_while_waiting() -> None:
    b = Budget("host", 10)
    b.reserve([(10, "a")])
    flag = threading.Event()
    threading.Timer(0.1, flag.set).start()
    with pytest.raises(Cancelled):
        b.reserve([(5, "b")], cancelled=flag.is_set, poll_s=0.02)


def test_many_threads_never_exceed_the_limit() -> None:
    b = Budget("host", 1000)
    rng = random.Random(7)
    sizes = [[(rng.randint(1, 400), "x") for _ in range(rng.randint(1, 3))] for _ in range(200)]
    over = []

    def worker(parts: list) -> None:
        rs = b.reserve(parts, poll_s=0.01)
        if b.reserved > b.limit:
            over.append(b.reserved)
        time.sleep(0.001)
        for r in rs:
            r.release()

    threads = [
        threading.Thread(target=worker, args=(p,)) for p in sizes if sum(n for n, _ in p) <= 1000
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not over
    assert b.reserved == 0 and 0 < b.peak <= 1000


def test_device_budget_backing() -> None:
    dev = DeviceBudget(device_id=0, limit_bytes=100)
    b = Budget("GPU 0 VRAM", 100, device_budget=dev)
    (r,) = b.reserve([(60, "key")])
    assert dev.reserved_bytes == 60  # the device's own allocator budget sees it
    # Memory taken outside the engine (the backend's own reservation) is respected.
    with dev.reserve(30, "outside"):
        assert b.try_reserve([(20, "partition")]) is None
        assert b.reserved == 60
    part = b.try_reserve([(20, "partition")])
    assert part is not None
    r.release()
    assert dev.reserved_bytes == 20
    part[0].release()
    assert dev.reserved_bytes == 0 and b.reserved == 0


def test_eviction_is_asked_for_the_devices_shortfall() -> None:
    """Memory the backend holds beyond the engine's reservations (a table made
    inside finished work) makes a reservation that fits the engine's view wait
    on the device: the evictor is asked for what the device lacks."""
    dev = DeviceBudget(device_id=0, limit_bytes=100)
    b = Budget("GPU 0 VRAM", 100, device_budget=dev)
    (idle_key,) = b.reserve([(50, "idle key")])
    table = dev.acquire(30, "NTT power table")  # the backend's own, outside the engine
    assert b.free == 50 and b.available() == 20
    asked: list[int] = []
    (r,) = b.reserve([(40, "partition")], evict=evicting(idle_key, asked))
    assert asked == [20] and r.nbytes == 40  # the engine alone would have seen no shortfall
    r.release()
    table.release()
    assert dev.reserved_bytes == 0 and b.reserved == 0


def test_a_reservation_splits_off_what_its_inner_holds_do_not_use() -> None:
    """A key's load draws its temporaries from the room of the partition that
    follows; once they are given back, that room is split off for it."""
    vram = DeviceBudget(0, 1000)
    b = Budget("vram:0", 1000, device_budget=vram)
    (both,) = b.reserve([(900, "key + partition")])
    with b.lend(both):
        kept = vram.acquire(300, "bases")  # the key's data, kept
        with vram.reserve(500, "staging"):  # the load's temporaries, given back
            assert both.unused() == 100
    assert both.unused() == 600
    with pytest.raises(ValueError, match="unused"):
        both.split(601, "partition")
    part = both.split(600, "partition")
    assert (both.nbytes, part.nbytes, b.reserved, vram.reserved_bytes) == (300, 600, 900, 900)
    part.release()
    assert (b.reserved, vram.reserved_bytes) == (300, 300)
    kept.release()
    both.release()
    assert (b.reserved, vram.reserved_bytes) == (0, 0)
    assert b.reserve([(1000, "all of it")])  # nothing was lost on the way


def test_work_sized_within_a_final_cap_sees_no_more_and_never_waits() -> None:
    vram = DeviceBudget(0, 1000)
    b = Budget("vram:0", 1000, device_budget=vram)
    with b.sized_within(300):
        assert vram.free_bytes == 300
        assert vram.await_lift() is False  # a final cap is never lifted: nothing to wait for
        with vram.reserve(600, "a reservation is not refused by the cap"):
            assert vram.free_bytes == 300
    assert vram.free_bytes == 1000
    with Budget("host", 1000).sized_within(300):  # no device budget: nothing to cap
        pass
