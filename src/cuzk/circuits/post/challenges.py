"""PoSt challenge derivation (rust-fil-proofs ``storage-proofs-post/src/fallback``).

Leaf challenge n of a sector::

    u64_le(SHA256(randomness ‖ u64_le(sector_id) ‖ u64_le(challenge_index))[0..8]) mod leaves

where ``challenge_index`` is n (WindowPoSt V1_1) or offset by the sector's
position in the partition (older proof types; see ``PoStConfig``). WinningPoSt
first picks its sector: ``u64_le(SHA256(prover_id ‖ randomness ‖
u64_le(n))[0..8]) mod sector_set_len``.
"""

from __future__ import annotations

import hashlib
import struct

from cuzk.algebra.fields import R
from cuzk.circuits.post.config import PoStConfig
from cuzk.errors import InputError


def _check_randomness(randomness: bytes) -> None:
    if len(randomness) != 32:
        raise InputError("PoSt randomness", "", f"randomness has 32 bytes, not {len(randomness)}")
    if int.from_bytes(randomness, "little") >= R:
        # rust-fil-proofs rejects it too (as_safe_commitment); Lotus masks first.
        raise InputError(
            "PoSt randomness",
            "",
            "not a field element: clear the top two bits of byte 31 (randomness[31] &= 0x3f)",
        )


def leaf_challenge(randomness: bytes, sector_id: int, challenge_index: int, num_leaves: int) -> int:
    _check_randomness(randomness)
    h = hashlib.sha256(
        randomness + struct.pack("<Q", sector_id) + struct.pack("<Q", challenge_index)
    ).digest()
    return struct.unpack("<Q", h[:8])[0] % num_leaves


def sector_leaf_challenges(
    config: PoStConfig, randomness: bytes, sector_id: int, sector_index: int = 0
) -> list[int]:
    """The challenged leaves of one sector at ``sector_index`` in its partition."""
    return [
        leaf_challenge(
            randomness, sector_id, config.challenge_index(sector_index, n), config.num_leaves
        )
        for n in range(config.challenge_count)
    ]


def winning_sector_challenge(
    randomness: bytes, prover_id: bytes, n: int, sector_set_len: int
) -> int:
    """Which of ``sector_set_len`` sectors WinningPoSt challenge n selects."""
    _check_randomness(randomness)
    if len(prover_id) != 32:
        raise InputError("prover id", "", f"a prover id has 32 bytes, not {len(prover_id)}")
    h = hashlib.sha256(prover_id + randomness + struct.pack("<Q", n)).digest()
    return struct.unpack("<Q", h[:8])[0] % sector_set_len


def prover_id_from_miner(miner_id: int) -> bytes:
    """prover_id: the miner's actor id as unsigned LEB128, zero-padded to 32 bytes."""
    out = bytearray()
    while True:
        b = miner_id & 0x7F
        miner_id >>= 7
        out.append(b | (0x80 if miner_id else 0))
        if not miner_id:
            break
    return bytes(out) + bytes(32 - len(out))
