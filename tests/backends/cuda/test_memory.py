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
