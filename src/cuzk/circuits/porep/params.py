"""Registered seal proofs and the StackedDRG parameters each one implies.

A registered seal proof (``StackedDrg32GiBV1_1`` …) fixes the sector size,
the proofs API version and the ``porep_id``; the sector size fixes the
number of layers, partitions, challenges per partition and the shape of
trees R and C. Values follow rust-fil-proofs (``filecoin-proofs``
``constants.rs`` / ``parameters.rs``) and rust-filecoin-proofs-api
(``registry.rs``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cuzk.errors import InputError
from cuzk.hashers.merkle import TreeShape

NODE_SIZE = 32
BASE_DEGREE = 6  # DRG parents
EXP_DEGREE = 8  # Feistel expander parents
TOTAL_PARENTS = 37  # parents hashed into every label (the 14 repeated to fill 37)

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30


class ApiVersion(enum.Enum):
    """The proofs API version: V1_0_0 orders DRG parents differently."""

    V1_0_0 = "1.0.0"
    V1_1_0 = "1.1.0"
    V1_2_0 = "1.2.0"


def proof_kind(shape: TreeShape) -> str:
    """The Merkle proof variant a tree of this shape produces: Single, Sub or Top."""
    return "Top" if shape.top else "Sub" if shape.sub else "Single"


@dataclass(frozen=True)
class SectorParams:
    """Everything about one sector size that the proof's shape depends on."""

    sector_size: int  # bytes
    layers: int
    partitions: int
    minimum_challenges: int
    tree_shape: TreeShape

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def challenges_per_partition(self) -> int:
        return -(-self.minimum_challenges // self.partitions)

    @property
    def tree_d_height(self) -> int:
        return self.nodes.bit_length() - 1

    @property
    def name(self) -> str:
        return size_name(self.sector_size)

    @property
    def tree_arities(self) -> tuple[int, ...]:
        """Arity of each level of a tree R / C path, leaf upwards."""
        return tuple(self.tree_shape.arities(self.nodes))

    def num_public_inputs(self) -> int:
        """Public inputs of one partition's circuit, ONE included."""
        per_challenge = 1 + BASE_DEGREE + EXP_DEGREE + 1 + 1 + 1
        return 1 + 3 + self.challenges_per_partition * per_challenge


SECTORS: dict[int, SectorParams] = {
    p.sector_size: p
    for p in (
        SectorParams(2 * KIB, 2, 1, 2, TreeShape(8)),
        SectorParams(8 * MIB, 2, 1, 2, TreeShape(8)),
        SectorParams(512 * MIB, 2, 1, 2, TreeShape(8)),
        SectorParams(32 * GIB, 11, 10, 176, TreeShape(8, 8)),
        SectorParams(64 * GIB, 11, 10, 176, TreeShape(8, 8, 2)),
    )
}


def size_name(sector_size: int) -> str:
    """2048 -> '2KiB', 34359738368 -> '32GiB' (the spelling in proof names)."""
    for unit, suffix in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if sector_size >= unit and sector_size % unit == 0:
            return f"{sector_size // unit}{suffix}"
    return f"{sector_size}B"


def parse_size(text: str) -> int:
    """'32GiB', '2KiB', '34359738368' -> bytes."""
    t = text.strip()
    for suffix, unit in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB), ("B", 1)):
        if t.endswith(suffix) and t[: -len(suffix)].isdigit():
            return int(t[: -len(suffix)]) * unit
    if t.isdigit():
        return int(t)
    raise ValueError(f"not a sector size: {text!r} (write e.g. 2KiB, 512MiB, 32GiB)")


def sector_params(sector_size: int) -> SectorParams:
    try:
        return SECTORS[sector_size]
    except KeyError:
        known = ", ".join(size_name(s) for s in SECTORS)
        raise ValueError(
            f"no registered seal proof for {size_name(sector_size)} ({known})"
        ) from None


@dataclass(frozen=True)
class RegisteredSealProof:
    """One entry of the append-only ``RegisteredSealProof`` enum."""

    name: str  # e.g. "StackedDrg32GiBV1_1"
    proof_id: int  # the enum value, also the first 8 bytes of porep_id
    sector_size: int
    api_version: ApiVersion
    feature: str | None = None  # "SyntheticPoRep" / "NonInteractivePoRep"
    # test configurations (rust-fil-proofs' own tests use tiny graphs and fixed ids)
    custom_sector: SectorParams | None = None
    custom_porep_id: bytes | None = None

    @property
    def sector(self) -> SectorParams:
        return self.custom_sector or sector_params(self.sector_size)

    @property
    def porep_id(self) -> bytes:
        """u64 LE proof id, then the u64 LE nonce (always 0), zero padded to 32."""
        if self.custom_porep_id is not None:
            return self.custom_porep_id
        return self.proof_id.to_bytes(8, "little") + bytes(24)

    @property
    def vanilla_variant(self) -> str:
        """The ``VanillaSealProof`` enum variant that carries this proof's shape."""
        return f"StackedDrg{size_name(self.sector_size)}V1"

    @property
    def interactive(self) -> bool:
        return self.feature is None


def _registry() -> dict[str, RegisteredSealProof]:
    sizes = [2 * KIB, 8 * MIB, 512 * MIB, 32 * GIB, 64 * GIB]
    groups = (
        ("V1", ApiVersion.V1_0_0, None),
        ("V1_1", ApiVersion.V1_1_0, None),
        ("V1_1_Feat_SyntheticPoRep", ApiVersion.V1_2_0, "SyntheticPoRep"),
        ("V1_2_Feat_NonInteractivePoRep", ApiVersion.V1_2_0, "NonInteractivePoRep"),
    )
    out = {}
    for g, (suffix, version, feature) in enumerate(groups):
        for i, size in enumerate(sizes):
            name = f"StackedDrg{size_name(size)}{suffix}"
            out[name] = RegisteredSealProof(name, 5 * g + i, size, version, feature)
    return out


REGISTERED_SEAL_PROOFS: dict[str, RegisteredSealProof] = _registry()


def registered_proof(name: str, source: str = "", field: str = "registered_proof"):
    """Look up a proof by name; an unknown or unsupported one is an InputError."""
    proof = REGISTERED_SEAL_PROOFS.get(name)
    if proof is None:
        raise InputError(source, field, f"unknown seal proof type {name!r}")
    return proof


def custom_proof(
    nodes: int,
    layers: int,
    challenges: int,
    tree_shape: TreeShape,
    porep_id: bytes = bytes([44]) * 32,
    api_version: ApiVersion = ApiVersion.V1_1_0,
) -> RegisteredSealProof:
    """An unregistered configuration (one partition), as rust-fil-proofs' tests build."""
    size = nodes * NODE_SIZE
    sector = SectorParams(size, layers, 1, challenges, tree_shape)
    name = f"Test{size_name(size)}x{layers}x{challenges}"
    return RegisteredSealProof(name, -1, size, api_version, None, sector, porep_id)


def default_proof(sector_size: int) -> RegisteredSealProof:
    """The current interactive proof for a sector size (the V1_1 one)."""
    sector_params(sector_size)
    return REGISTERED_SEAL_PROOFS[f"StackedDrg{size_name(sector_size)}V1_1"]
