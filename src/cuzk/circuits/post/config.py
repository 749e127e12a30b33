"""PoSt parameters: sector sizes, tree shapes, challenge and sector counts.

Values from rust-fil-proofs ``filecoin-proofs/src/constants.rs``:
WinningPoSt challenges 1 sector 66 times; WindowPoSt 10 challenges per
sector, 2349 sectors per 32GiB partition (2300 for 64GiB, 2 for the small
test sizes). Tree R's shape per sector size: base arity 8, then optionally
a sub-tree arity and a top-tree arity (the ``SectorShape*`` types).

A :class:`PoStConfig` holds these API-level counts, which fix the vanilla
proofs (WinningPoSt: one sector proof with 66 inclusion proofs). The circuit
is laid out from them as ``winning_post_setup_params`` does: WinningPoSt's
circuit has 66 sector slots of 1 challenge each (the one sector repeated),
WindowPoSt's has the partition's sectors with all their challenges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuzk.errors import InputError
from cuzk.hashers.merkle import TreeShape

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
NODE_SIZE = 32

SHAPES: dict[int, TreeShape] = {
    2 * KiB: TreeShape(8),
    4 * KiB: TreeShape(8, 2),
    16 * KiB: TreeShape(8, 8),
    32 * KiB: TreeShape(8, 8, 2),
    8 * MiB: TreeShape(8),
    16 * MiB: TreeShape(8, 2),
    512 * MiB: TreeShape(8),
    1 * GiB: TreeShape(8, 2),
    32 * GiB: TreeShape(8, 8),
    64 * GiB: TreeShape(8, 8, 2),
}

WINNING_POST_CHALLENGE_COUNT = 66
WINNING_POST_SECTOR_COUNT = 1
WINDOW_POST_CHALLENGE_COUNT = 10
WINDOW_POST_SECTOR_COUNT = {size: 2 for size in SHAPES} | {32 * GiB: 2349, 64 * GiB: 2300}

WINNING = "winning-post"
WINDOW = "window-post"

# Filecoin's RegisteredPoStProof numbers (go-state-types abi).
_REGISTERED: dict[int, tuple[str, int, bool]] = {}
for _i, _size in enumerate((2 * KiB, 8 * MiB, 512 * MiB, 32 * GiB, 64 * GiB)):
    _REGISTERED[_i] = (WINNING, _size, False)
    _REGISTERED[5 + _i] = (WINDOW, _size, False)
    _REGISTERED[10 + _i] = (WINDOW, _size, True)


def parse_sector_size(text: str | int) -> int:
    """'32GiB', '2KiB', '512MiB' or a byte count → bytes."""
    if isinstance(text, int):
        size = text
    else:
        m = re.fullmatch(r"\s*(\d+)\s*([KMG]i?B)?\s*", text, re.IGNORECASE)
        if not m:
            raise InputError("sector size", "", f"{text!r} is not a size like 32GiB or 2KiB")
        unit = (m.group(2) or "B").upper().replace("I", "")
        size = int(m.group(1)) * {"B": 1, "KB": KiB, "MB": MiB, "GB": GiB}[unit]
    if size not in SHAPES:
        known = ", ".join(format_sector_size(s) for s in sorted(SHAPES))
        raise InputError("sector size", "", f"{size} bytes is not a Filecoin sector size ({known})")
    return size


def format_sector_size(size: int) -> str:
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{name}"
    return f"{size}B"


@dataclass(frozen=True)
class PoStConfig:
    """One PoSt circuit: its kind, sector size and per-partition counts.

    ``challenge_index_per_sector``: True for the v1.2 API (WindowPoSt proof
    types V1_1, numbers 10–14), where a challenge's index restarts at 0 for
    every sector; False for earlier types, where it is offset by the
    sector's position in the partition.
    """

    kind: str
    sector_size: int
    challenge_count: int
    sector_count: int
    challenge_index_per_sector: bool = True

    @property
    def shape(self) -> TreeShape:
        return SHAPES[self.sector_size]

    @property
    def num_leaves(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def arities(self) -> tuple[int, ...]:
        return tuple(self.shape.arities(self.num_leaves))

    @property
    def circuit_id(self) -> str:
        return f"{self.kind}/{format_sector_size(self.sector_size)}"

    def challenge_index(self, sector_index: int, n: int) -> int:
        """The index hashed into challenge n of the vanilla sector at ``sector_index``."""
        if self.challenge_index_per_sector:
            return n
        return sector_index * self.challenge_count + n

    # --- the circuit's layout ---------------------------------------------------
    @property
    def circuit_sector_count(self) -> int:
        """Sector slots in the circuit: WinningPoSt's challenge count over its
        sector count (66), WindowPoSt's sectors per partition."""
        if self.kind == WINNING:
            if self.challenge_count % self.sector_count:
                raise InputError(
                    "PoSt config", self.circuit_id, "sector count must divide challenge count"
                )
            return self.challenge_count // self.sector_count
        return self.sector_count

    @property
    def circuit_challenge_count(self) -> int:
        """Challenges per sector slot of the circuit (WinningPoSt: 1)."""
        if self.kind == WINNING:
            return self.challenge_count // self.circuit_sector_count
        return self.challenge_count

    @property
    def slots_per_sector(self) -> int:
        """Circuit slots one vanilla sector proof fills (its inclusion proofs in
        groups of ``circuit_challenge_count``): 66 for WinningPoSt, else 1."""
        return self.challenge_count // self.circuit_challenge_count

    def circuit_challenge_index(self, slot: int, n: int) -> int:
        """The index hashed into challenge n of circuit slot ``slot`` (counted
        across partitions), as the circuit's public inputs derive it. For
        WinningPoSt slot i gets index i, the same leaf as vanilla challenge i."""
        if self.challenge_index_per_sector:
            return n
        return slot * self.circuit_challenge_count + n


def post_config(kind: str, sector_size: int | str, v1_1: bool = True) -> PoStConfig:
    size = parse_sector_size(sector_size)
    if kind == WINNING:
        return PoStConfig(
            WINNING, size, WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT, False
        )
    if kind == WINDOW:
        return PoStConfig(
            WINDOW, size, WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT[size], v1_1
        )
    raise InputError("circuit kind", "", f"{kind!r} is not {WINNING} or {WINDOW}")


def config_for_registered_proof(number: int) -> PoStConfig:
    """The config of a RegisteredPoStProof number (e.g. 8 = Window32GiBV1)."""
    if number not in _REGISTERED:
        raise InputError("PoSt proof type", "", f"{number} is not a RegisteredPoStProof (0–14)")
    kind, size, v1_1 = _REGISTERED[number]
    return post_config(kind, size, v1_1)
