"""PoSt vanilla proofs: the data, and their bincode encoding.

A sector's vanilla proof (rust-fil-proofs ``FallbackPoStSectorProof``,
serialised with bincode by ``rust-filecoin-proofs-api``; Curio decodes the
same layout in ``lib/proof/post_vproof_bin_decode.go``)::

    u64 sector_id
    [32] comm_r
    u64 n_sectors, then per sector:            (``Proof { sectors }``)
        u64 n_proofs, then per inclusion proof:
            u32 variant  0 = Single {root, leaf, path}
                         1 = Sub    {base_path, sub_path, root, leaf}
                         2 = Top    {base_path, sub_path, top_path, root, leaf}
            a path is u64 n_elements, each: u64 n_hashes, [32]×n, u64 index
        [32] comm_c
        [32] comm_r_last

Integers are little-endian; 32-byte values are little-endian Fr elements.
A WindowPoSt proof holds 1 sector with 10 inclusion proofs; a WinningPoSt
proof (Curio's ``GenerateSingleVanillaProof`` for the one challenged sector)
holds 1 sector with 66, which the circuit takes as 66 one-challenge slots.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cuzk.errors import InputError
from cuzk.hashers.domain import fr_from_le_bytes, fr_to_le_bytes
from cuzk.hashers.merkle import PathElement

SINGLE, SUB, TOP = 0, 1, 2
_VARIANTS = {SINGLE: "Single", SUB: "Sub", TOP: "Top"}


@dataclass(frozen=True)
class MerkleProof:
    """An inclusion proof in tree R (``Single``, ``Sub`` or ``Top`` variant)."""

    variant: int
    root: int
    leaf: int
    base: tuple[PathElement, ...]
    sub: tuple[PathElement, ...] = ()
    top: tuple[PathElement, ...] = ()

    @property
    def path(self) -> tuple[PathElement, ...]:
        return self.base + self.sub + self.top


@dataclass(frozen=True)
class SectorProof:
    inclusion_proofs: tuple[MerkleProof, ...]
    comm_c: int
    comm_r_last: int


@dataclass(frozen=True)
class FallbackPoStSectorProof:
    sector_id: int
    comm_r: int
    sectors: tuple[SectorProof, ...]  # one in practice


class BincodeReader:
    """Reads bincode (serde's default Rust encoding) field by field.

    Integers are little-endian, a sequence's length a ``u64``, a domain
    value 32 little-endian bytes that must be a canonical Fr element. Every
    read names its field, so a short or malformed input is an
    :class:`~cuzk.errors.InputError` saying which field at which offset
    (``source`` names the file or request). Shared by the PoSt and SnapDeals
    vanilla-proof readers.
    """

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.pos = 0
        self.source = source

    def _take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise InputError(
                self.source,
                what,
                f"truncated: needs {n} bytes at offset {self.pos}, file has {len(self.data)}",
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self._take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self._take(8, what))[0]

    def length(self, what: str, limit: int) -> int:
        n = self.u64(what)
        if n > limit:
            raise InputError(
                self.source, what, f"length {n} at offset {self.pos - 8} is implausible"
            )
        return n

    def domain(self, what: str) -> int:
        at = self.pos
        raw = self._take(32, what)
        return fr_from_le_bytes(raw, self.source, f"{what} (offset {at})")


def _read_path(r: BincodeReader, what: str) -> tuple[PathElement, ...]:
    n = r.length(f"{what} length", 64)
    out = []
    for i in range(n):
        k = r.length(f"{what}[{i}] hash count", 64)
        hashes = tuple(r.domain(f"{what}[{i}].hashes[{j}]") for j in range(k))
        index = r.u64(f"{what}[{i}].index")
        if index > k:
            raise InputError(r.source, f"{what}[{i}].index", f"{index} exceeds the arity {k + 1}")
        out.append(PathElement(hashes, index))
    return tuple(out)


def read_merkle_proof(r: BincodeReader, what: str) -> MerkleProof:
    """One bincode ``MerkleProof`` (Single, Sub or Top variant) at the reader's position.

    ``what`` is the field path used in error messages. Variant-specific
    field order as rust-fil-proofs' serde derives it; no shape is enforced
    here (the verifiers check arities against the tree shape).
    """
    at = r.pos
    variant = r.u32(f"{what}.variant")
    if variant == SINGLE:
        root = r.domain(f"{what}.root")
        leaf = r.domain(f"{what}.leaf")
        base = _read_path(r, f"{what}.path")
        return MerkleProof(SINGLE, root, leaf, base)
    if variant == SUB:
        base = _read_path(r, f"{what}.base_proof")
        sub = _read_path(r, f"{what}.sub_proof")
        root = r.domain(f"{what}.root")
        leaf = r.domain(f"{what}.leaf")
        return MerkleProof(SUB, root, leaf, base, sub)
    if variant == TOP:
        base = _read_path(r, f"{what}.base_proof")
        sub = _read_path(r, f"{what}.sub_proof")
        top = _read_path(r, f"{what}.top_proof")
        root = r.domain(f"{what}.root")
        leaf = r.domain(f"{what}.leaf")
        return MerkleProof(TOP, root, leaf, base, sub, top)
    raise InputError(r.source, f"{what}.variant", f"unknown proof variant {variant} at offset {at}")


def read_sector_proof(data: bytes, source: str = "vanilla proof") -> FallbackPoStSectorProof:
    """Decode one bincode ``FallbackPoStSectorProof``; the whole input must be used."""
    r = BincodeReader(data, source)
    sector_id = r.u64("sector_id")
    comm_r = r.domain("comm_r")
    n = r.length("vanilla_proof.sectors length", 1 << 16)
    sectors = []
    for s in range(n):
        what = f"vanilla_proof.sectors[{s}]"
        m = r.length(f"{what}.inclusion_proofs length", 1 << 16)
        proofs = tuple(read_merkle_proof(r, f"{what}.inclusion_proofs[{i}]") for i in range(m))
        comm_c = r.domain(f"{what}.comm_c")
        comm_r_last = r.domain(f"{what}.comm_r_last")
        sectors.append(SectorProof(proofs, comm_c, comm_r_last))
    if r.pos != len(data):
        raise InputError(source, "", f"{len(data) - r.pos} trailing bytes after the proof")
    return FallbackPoStSectorProof(sector_id, comm_r, tuple(sectors))


def _path_bytes(path: tuple[PathElement, ...]) -> bytes:
    out = [struct.pack("<Q", len(path))]
    for el in path:
        out.append(struct.pack("<Q", len(el.hashes)))
        out += [fr_to_le_bytes(h) for h in el.hashes]
        out.append(struct.pack("<Q", el.index))
    return b"".join(out)


def merkle_proof_bytes(p: MerkleProof) -> bytes:
    """The bincode encoding of a ``MerkleProof``: the inverse of :func:`read_merkle_proof`."""
    tail = fr_to_le_bytes(p.root) + fr_to_le_bytes(p.leaf)
    if p.variant == SINGLE:
        return struct.pack("<I", SINGLE) + tail + _path_bytes(p.base)
    if p.variant == SUB:
        return struct.pack("<I", SUB) + _path_bytes(p.base) + _path_bytes(p.sub) + tail
    return (
        struct.pack("<I", TOP)
        + _path_bytes(p.base)
        + _path_bytes(p.sub)
        + _path_bytes(p.top)
        + tail
    )


def write_sector_proof(proof: FallbackPoStSectorProof) -> bytes:
    """Encode a ``FallbackPoStSectorProof`` as bincode."""
    out = [struct.pack("<Q", proof.sector_id), fr_to_le_bytes(proof.comm_r)]
    out.append(struct.pack("<Q", len(proof.sectors)))
    for s in proof.sectors:
        out.append(struct.pack("<Q", len(s.inclusion_proofs)))
        out += [merkle_proof_bytes(p) for p in s.inclusion_proofs]
        out.append(fr_to_le_bytes(s.comm_c) + fr_to_le_bytes(s.comm_r_last))
    return b"".join(out)


def variant_for_shape(sub: int, top: int) -> int:
    return TOP if top else (SUB if sub else SINGLE)
