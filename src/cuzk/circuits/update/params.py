"""EmptySectorUpdate parameters per sector size (``storage-proofs-update`` ``constants.rs``).

A SnapDeals update proof has ``partition_count`` partitions; each proves
``challenge_count`` challenged nodes: the old replica leaf (tree R old), the
new data leaf (tree D new, up to the partition's *apex leaves*) and the new
replica leaf (tree R new) with ``new = old + data · rho(high bits)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.circuits.porep.params import KIB, NODE_SIZE, parse_size, size_name
from cuzk.hashers.merkle import TreeShape
from cuzk.hashers.poseidon_constants import PoseidonConstants, poseidon_constants

# HashType::Custom(CType::Arbitrary(1)): neptune's domain tag id · 2^40
GEN_RANDOMNESS_TAG = 1 << 40

# sector nodes → tree R (base, sub, top) arities, from validate_tree_r_shape
_TREE_R = {
    1 << 5: (8, 4, 0),
    1 << 6: (8, 0, 0),
    1 << 7: (8, 2, 0),
    1 << 8: (8, 4, 0),
    1 << 9: (8, 8, 0),
    1 << 10: (8, 8, 2),
    1 << 18: (8, 0, 0),
    1 << 19: (8, 2, 0),
    1 << 24: (8, 0, 0),
    1 << 30: (8, 8, 0),
    1 << 31: (8, 8, 2),
}

REGISTERED_UPDATE_PROOFS = {
    f"StackedDrg{name}V1": i for i, name in enumerate(["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"])
}


def gen_randomness_constants() -> PoseidonConstants:
    """Poseidon arity 2 with the custom "generate randomness" domain tag."""
    return poseidon_constants(2).with_tag(GEN_RANDOMNESS_TAG)


@dataclass(frozen=True)
class UpdateParams:
    """``PublicParams::from_sector_size`` of storage-proofs-update."""

    sector_nodes: int

    def __post_init__(self) -> None:
        if self.sector_nodes not in _TREE_R:
            raise ValueError(f"no SnapDeals parameters for {size_name(self.sector_bytes)} sectors")

    @staticmethod
    def of(sector_size: int | str) -> UpdateParams:
        size = parse_size(sector_size) if isinstance(sector_size, str) else sector_size
        return UpdateParams(size // NODE_SIZE)

    @property
    def sector_bytes(self) -> int:
        return self.sector_nodes * NODE_SIZE

    @property
    def name(self) -> str:
        return size_name(self.sector_bytes)

    @property
    def tree_shape(self) -> TreeShape:
        return TreeShape(*_TREE_R[self.sector_nodes])

    @property
    def tree_r_arities(self) -> tuple[int, ...]:
        return tuple(self.tree_shape.arities(self.sector_nodes))

    @property
    def challenge_bit_len(self) -> int:
        return self.sector_nodes.bit_length() - 1

    @property
    def partition_count(self) -> int:
        n = self.sector_nodes
        if n <= 8 * KIB // NODE_SIZE:
            return 1
        if n <= 32 * KIB // NODE_SIZE:
            return 2
        if n <= (16 << 20) // NODE_SIZE:
            return 4
        return 16

    @property
    def partition_bit_len(self) -> int:
        return self.partition_count.bit_length() - 1

    @property
    def challenge_count(self) -> int:
        return 10 if self.sector_nodes <= (16 << 20) // NODE_SIZE else 86

    @property
    def hs(self) -> tuple[int, ...]:
        return (1,) * 6 if self.sector_nodes <= 32 * KIB // NODE_SIZE else (7, 8, 9, 10, 11, 12)

    @property
    def h_default(self) -> int:
        return self.hs[3]

    def h_select(self, h: int) -> int:
        if h not in self.hs:
            raise ValueError(f"h = {h} is not allowed for {self.name} sectors ({self.hs})")
        return 1 << self.hs.index(h)

    @property
    def apex_leaf_count(self) -> int:
        return 8 if self.sector_nodes <= 8 * KIB // NODE_SIZE else 128

    @property
    def apex_leaf_bit_len(self) -> int:
        return self.apex_leaf_count.bit_length() - 1

    @property
    def apex_leafs_height(self) -> int:
        """Tree D levels between a leaf and its apex leaf."""
        return self.challenge_bit_len - self.partition_bit_len - self.apex_leaf_bit_len

    @property
    def random_bits_per_challenge(self) -> int:
        return self.challenge_bit_len - self.partition_bit_len

    @property
    def challenges_per_digest(self) -> int:
        return 254 // self.random_bits_per_challenge

    @property
    def digests_per_partition(self) -> int:
        return -(-self.challenge_count // self.challenges_per_digest)

    def k_and_h_select(self, k: int, h: int) -> int:
        if not 0 <= k < self.partition_count:
            raise ValueError(f"partition {k} of {self.partition_count}")
        return k | (self.h_select(h) << self.partition_bit_len)
