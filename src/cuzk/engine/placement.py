"""Placement: which device proves a synthesized partition.

The GPU workers of every device take partitions from one priority queue; a
worker that is free asks :func:`may_take` for each queued partition, in
queue order, and takes the first it may. The rule, for a partition of
circuit X offered to device D:

1. D is healthy and the partition has not failed on D already (a partition
   is tried at most once on each device); the other devices count only when
   the same holds for them ("able").
2. If D holds X's key (resident, or being loaded there): the least loaded
   able holder that has a free worker takes it, where load is the partitions
   its workers hold, ties to the lower ordinal. Both GPUs holding the key
   share a job's partitions: five and five of a 32GiB PoRep's ten when both
   are free.
3. If D does not hold X's key and an able device does:
   - a holder with a free worker takes it (D waits);
   - while X's partitions waiting for a device (queued for a GPU, being
     synthesized, or queued for synthesis) are no more than the holders'
     workers, the holders take them as they come free: no second copy of a
     key (tens of GiB, tens of seconds to load) for a one-partition job when
     a holder will be free after the partition it is proving;
   - otherwise the backlog is worth a second copy: D loads the key, unless
     another able device without it, with a free worker, has more free budget
     (ties to the lower ordinal).
4. If no able device holds X's key: the able device with a free worker and
   the most free budget loads it (ties to the lower ordinal).

These are strict orders over the devices, so the device that comes first
never defers and no partition waits while an able device is free and
entitled to it. The budgets still decide what fits: a device that takes a
partition reserves its key and working set there (evicting idle keys, or
waiting), exactly as on one device.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceLoad:
    """A device as placement sees it at one moment."""

    ordinal: int
    healthy: bool
    workers: int  # GPU workers of the device
    held: int  # partitions its workers have taken and not finished
    free_workers: int  # workers holding none
    free_bytes: int  # budget not reserved
    keys: frozenset[str]  # circuits whose key is resident there, or being loaded


def may_take(
    me: DeviceLoad,
    devices: Sequence[DeviceLoad],
    circuit_id: str,
    waiting: int,
    failed_on: Collection[int] = (),
) -> bool:
    """Whether a free worker of ``me`` takes a partition of ``circuit_id`` now.

    ``devices``: every device (``me`` included); ``waiting``: the partitions of
    that circuit not yet on a device (this one included); ``failed_on``: the
    devices this partition has failed on.
    """
    if not me.healthy or me.ordinal in failed_on:
        return False
    able = [d for d in devices if d.healthy and d.ordinal not in failed_on]
    others = [d for d in able if d.ordinal != me.ordinal]
    holders = [d for d in others if circuit_id in d.keys]
    if circuit_id in me.keys:
        return not any(
            d.free_workers > 0 and (d.held, d.ordinal) < (me.held, me.ordinal) for d in holders
        )
    if holders:
        if any(d.free_workers > 0 for d in holders):
            return False
        if waiting <= sum(d.workers for d in holders):
            return False
    loaders = [d for d in others if circuit_id not in d.keys and d.free_workers > 0]
    return not any((-d.free_bytes, d.ordinal) < (-me.free_bytes, me.ordinal) for d in loaders)
