"""The key store's records: a key's entry (its tier, sources, what each device
holds of it) and the leases partitions hold on it."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.engine.budget import Reservation
from cuzk.engine.devices import Device
from cuzk.engine.keystore.residency import Residency
from cuzk.engine.kinds.base import KeyFiles, ProofKindHandler
from cuzk.groth16 import prover
from cuzk.groth16.keys import QUERIES, KeySource, VerifyingKey
from cuzk.groth16.setup import ToxicWaste

# Device bytes the fixed-base kernels hold while a file-less development key's
# points are made for a load: one load chunk of G2 points (2^20) with their
# XYZZ intermediates, scalars and affine output (~700 bytes a point), rounded up.
DEV_POINTS_DEVICE_BYTES = 1 << 30


class Tier(enum.IntEnum):
    HOT = 0
    WARM = 1
    COLD = 2


def source_point_bytes(source: KeySource) -> int:
    """A key's points as raw affine limbs (what a device holds): 96 bytes a G1
    point, 192 a G2 point."""
    return sum(source.count(q) * (192 if q == "b_g2" else 96) for q in QUERIES)


# --- entries and leases -------------------------------------------------------
@dataclass
class KeyEntry:
    circuit_id: str
    handler: ProofKindHandler
    files: KeyFiles
    path: Path | None = None  # the .params file found or written (None: not yet, or no file)
    size_bytes: int = 0
    source: KeySource | None = None  # WARM when set
    vk: VerifyingKey | None = None  # of the key last opened or made
    development: bool = False  # not Filecoin's published key (INSECURE)
    dev_waste: ToxicWaste | None = None  # a file-less development key's, to make it again
    dev_reservation: Reservation | None = None  # host memory of its scalars while loading
    dev_users: int = 0  # loads using a file-less development key's scalars now
    dev_points_on: int | None = None  # the GPU that key's own points are made on
    prepared: dict[int, prover.PreparedKey] = field(default_factory=dict)  # HOT per device
    reservations: dict[int, Reservation] = field(default_factory=dict)
    residency: dict[int, Residency] = field(default_factory=dict)  # planned per device
    pinned: dict[int, Reservation] = field(default_factory=dict)  # host memory of streamed parts
    refs: int = 0  # in-flight partitions using the key
    device_refs: dict[int, int] = field(default_factory=dict)
    last_used: float = 0.0
    load_lock: threading.Lock = field(default_factory=threading.Lock)
    device_locks: dict[int, threading.Lock] = field(default_factory=dict)

    @property
    def tier(self) -> Tier:
        if self.prepared:
            return Tier.HOT
        if self.source is not None:
            return Tier.WARM
        return Tier.COLD


@dataclass
class HostLease:
    """A pinned key plus a partition's host working set (held synthesis → proof)."""

    entry: KeyEntry
    working: Reservation
    load_ms: float


@dataclass
class DeviceLease:
    entry: KeyEntry
    device: Device
    key: prover.PreparedKey
    working: Reservation | None
    load_ms: float
    # bytes of the partition's working set still to reserve (reserve_rest) when
    # only its witness's share was taken (acquire_device's witness_bytes), and
    # the device's share slot it holds until then
    rest: int = 0
    slot: threading.Lock | None = None
    residency: Residency | None = None  # where the key and the partition live on the device

    def give_slot(self) -> None:
        if self.slot is not None:
            self.slot.release()
            self.slot = None


@dataclass(frozen=True)
class KeyStatus:
    circuit_id: str
    tier: Tier
    size_bytes: int
    ref_count: int
    devices: tuple[int, ...]
    idle_s: float
    file: str = ""  # the .params file ("" while none is found, or for a key made in memory)
    development: bool = False  # an INSECURE development key, not Filecoin's
    device_bytes: dict[int, int] = field(default_factory=dict)  # reserved per device holding it
