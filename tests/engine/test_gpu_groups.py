"""The GPU worker's full group carried beside the next partition
(``pipeline.gpu.Finish``, ``GpuWorkers._hand_on``), on stand-in workers: what
becomes of the group and of the partition that carried it after the join,
and what a stopping worker or a device leaving service does with a group
still to finish."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cuzk.engine.pipeline import gpu
from cuzk.engine.pipeline.queues import WorkerState
from cuzk.errors import DeviceError
from cuzk.groth16 import prover


class Hold:
    def __init__(self) -> None:
        self.released = False

    def release(self) -> None:
        self.released = True


def _waiting(n: int) -> list[gpu.Waiting]:
    return [
        gpu.Waiting(SimpleNamespace(index=i, job=SimpleNamespace(finished=False)), None, Hold(), 0)
        for i in range(n)
    ]


class Workers(gpu.GpuWorkers):
    """GpuWorkers' group handling alone: what it does to items, noted."""

    def __init__(self) -> None:  # no pipeline behind it
        self.did: list[tuple] = []

    def _group_done(self, dev, live, times, t, end, beside=False):
        self.did.append(("done", [w.item.index for w in live], beside))

    def _group_failed(self, dev, live, e):
        self.did.append(("failed", [w.item.index for w in live], str(e)))

    def release(self, item):
        self.did.append(("released", item.index))

    def _give_back(self, item):
        self.did.append(("given back", item.index))


def _state(closing: list) -> WorkerState:
    return WorkerState("gpu-0", device=SimpleNamespace(ordinal=0, label="gpu 0"), closing=closing)


def _ran(group, error: BaseException | None = None, done: bool = True) -> gpu.Finish:
    """A group's finish whose passes ran beside the partition just proved."""
    f = gpu.Finish(group, SimpleNamespace(done=done, times=prover.StageTimes()))
    f.ran, f.error = True, error
    return f


def test_a_carried_group_goes_on_after_the_join_whatever_its_carrier_did() -> None:
    w = Workers()
    group = _waiting(2)
    state = _state(group)
    w._hand_on(state, _ran(group), None)
    assert w.did == [("done", [0, 1], True)] and state.closing == []
    # the carrier's own failure (not the device's) leaves the group's proofs be
    w.did.clear()
    state.closing = group
    w._hand_on(state, _ran(group), ValueError("its witness broke"))
    assert w.did == [("done", [0, 1], True)]


def test_a_failed_carried_finish_fails_its_group_alone() -> None:
    w = Workers()
    group = _waiting(2)
    state = _state(group)
    w._hand_on(state, _ran(group, ValueError("shared pass broke")), None)  # no raise
    assert w.did == [("failed", [0, 1], "shared pass broke")] and state.closing == []


def test_a_device_failure_on_either_line_gives_both_back() -> None:
    w = Workers()
    group = _waiting(2)
    # the carrier's device failure: the group goes the same way
    state = _state(group)
    w._hand_on(state, _ran(group), DeviceError(0, "fell off the bus"))
    assert w.did == [("failed", [0, 1], "GPU 0: fell off the bus")]
    # the finish's: the group, then the carrier (raised to its own handling)
    w.did.clear()
    state.closing = group
    with pytest.raises(DeviceError, match="fell off"):
        w._hand_on(state, _ran(group, DeviceError(0, "fell off the bus")), None)
    assert w.did == [("failed", [0, 1], "GPU 0: fell off the bus")]


def test_a_finish_the_branch_never_ran_stays_the_workers_to_finish() -> None:
    w = Workers()
    group = _waiting(2)
    state = _state(group)
    never = gpu.Finish(group, SimpleNamespace(done=False))
    w._hand_on(state, never, ValueError("failed before its H MSM"))
    w._hand_on(state, None, None)
    assert w.did == [] and state.closing == group


def test_a_group_with_passes_left_waits_for_the_next_carrier() -> None:
    """Its passes ran beside the partition until its H MSM ended, some are
    left: the group stays the worker's closing one, its finish kept; a device
    failure of the carrier gives it back all the same."""
    w = Workers()
    group = _waiting(2)
    state = _state(group)
    part = _ran(group, done=False)
    state.finish = part
    w._hand_on(state, part, None)
    w._hand_on(state, part, ValueError("the carrier's own witness broke"))
    assert w.did == [] and state.closing == group and state.finish is part
    w._hand_on(state, part, DeviceError(0, "fell off the bus"))
    assert w.did == [("failed", [0, 1], "GPU 0: fell off the bus")]
    assert state.closing == [] and state.finish is None


def test_a_stopping_worker_or_a_lost_device_lets_go_of_a_group_to_finish() -> None:
    w = Workers()
    closing, waiting = _waiting(2), _waiting(1)
    state = _state(closing)
    state.waiting = waiting
    state.finish = _ran(closing, done=False)
    w._drop_waiting(state)
    assert state.closing == state.waiting == [] and state.finish is None
    assert all(x.hold is None for x in closing + waiting)
    assert w.did == [("released", 0), ("released", 1), ("released", 0)]
    w.did.clear()
    closing = _waiting(2)
    state.closing = closing
    w._give_back_waiting(state)
    assert state.closing == [] and w.did == [("given back", 0), ("given back", 1)]
