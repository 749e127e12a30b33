"""Sealed-sector CIDs (``bagboea4b…``) to and from comm_r.

A sealed CID is CIDv1, multicodec ``fil-commitment-sealed`` (0xf102), with
a multihash of type ``poseidon-bls12_381-a2-fc1`` (0xb401) whose 32-byte
digest is comm_r (little-endian Fr), written in multibase base32 (``b``).
"""

from __future__ import annotations

import base64

from cuzk.errors import InputError
from cuzk.hashers.domain import fr_from_le_bytes, fr_to_le_bytes

SEALED_CODEC = 0xF102
POSEIDON_MULTIHASH = 0xB401


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while pos < len(data):
        b = data[pos]
        n |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return n, pos
        shift += 7
    raise ValueError("truncated varint")


def comm_r_from_sealed_cid(cid: str, source: str = "sealed CID") -> int:
    if not cid.startswith("b"):
        raise InputError(source, "", f"{cid!r} is not a base32 (b…) CID")
    body = cid[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
        version, pos = _read_varint(raw, 0)
        codec, pos = _read_varint(raw, pos)
        mh, pos = _read_varint(raw, pos)
        length, pos = _read_varint(raw, pos)
    except ValueError as e:
        raise InputError(source, "", f"{cid!r} is not a valid CID ({e})") from e
    if version != 1 or codec != SEALED_CODEC or mh != POSEIDON_MULTIHASH or length != 32:
        raise InputError(
            source,
            "",
            f"not a sealed-sector commitment CID (version {version}, codec {codec:#x}, "
            f"multihash {mh:#x}, length {length})",
        )
    digest = raw[pos : pos + 32]
    if len(digest) != 32 or pos + 32 != len(raw):
        raise InputError(source, "", "the CID's digest is not 32 bytes")
    return fr_from_le_bytes(digest, source, "digest")


def sealed_cid_from_comm_r(comm_r: int) -> str:
    raw = (
        _varint(1)
        + _varint(SEALED_CODEC)
        + _varint(POSEIDON_MULTIHASH)
        + _varint(32)
        + fr_to_le_bytes(comm_r)
    )
    return "b" + base64.b32encode(raw).decode().rstrip("=").lower()
