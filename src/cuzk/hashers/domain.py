"""32-byte domain values: the little-endian Fr encoding Filecoin hashes use."""

from __future__ import annotations

from cuzk.algebra.fields import R
from cuzk.errors import InputError


def fr_from_le_bytes(data: bytes, source: str = "input", field: str = "") -> int:
    """A 32-byte little-endian value as an Fr int; rejects non-canonical ones."""
    if len(data) != 32:
        raise InputError(source, field, f"a domain value has 32 bytes, not {len(data)}")
    v = int.from_bytes(data, "little")
    if v >= R:
        raise InputError(
            source, field, f"0x{data.hex()} (little-endian) is not below the field modulus r"
        )
    return v


def fr_to_le_bytes(v: int) -> bytes:
    return (v % R).to_bytes(32, "little")
