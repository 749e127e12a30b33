"""Valid PoSt vanilla proofs for test sectors of any size.

Only the challenged paths are materialised (:func:`~cuzk.hashers.merkle.
sparse_poseidon_tree`): a 32GiB sector's WindowPoSt proof costs ten Merkle
paths (its WinningPoSt proof 66), not a 32GiB tree. ``comm_c`` is random and
``comm_r = Poseidon2(comm_c, comm_r_last)``, so the proof passes the vanilla
verifier and satisfies the circuit exactly as a real sector's would.
"""

from __future__ import annotations

import random

from cuzk.algebra.fields import R
from cuzk.circuits.post.challenges import sector_leaf_challenges
from cuzk.circuits.post.config import PoStConfig
from cuzk.circuits.post.vanilla import (
    FallbackPoStSectorProof,
    MerkleProof,
    SectorProof,
    variant_for_shape,
)
from cuzk.hashers.merkle import sparse_poseidon_tree
from cuzk.hashers.poseidon import hash2


def generate_sector_proof(
    config: PoStConfig,
    randomness: bytes,
    sector_id: int,
    sector_index: int = 0,
    seed: int | None = None,
) -> FallbackPoStSectorProof:
    """A valid vanilla proof for a made-up sector ``sector_id``."""
    rng = random.Random(seed if seed is not None else sector_id)
    challenges = sector_leaf_challenges(config, randomness, sector_id, sector_index)
    shape = config.shape
    tree = sparse_poseidon_tree(challenges, config.num_leaves, shape, rng)
    n_top = 1 if shape.top else 0
    n_sub = 1 if shape.sub else 0
    variant = variant_for_shape(shape.sub, shape.top)
    proofs = []
    for c in challenges:
        path = tree.paths[c]
        n_base = len(path) - n_sub - n_top
        proofs.append(
            MerkleProof(
                variant=variant,
                root=tree.root,
                leaf=tree.leaves[c],
                base=tuple(path[:n_base]),
                sub=tuple(path[n_base : n_base + n_sub]),
                top=tuple(path[n_base + n_sub :]),
            )
        )
    comm_c = rng.randrange(R)
    comm_r = hash2(comm_c, tree.root)
    return FallbackPoStSectorProof(
        sector_id=sector_id,
        comm_r=comm_r,
        sectors=(SectorProof(tuple(proofs), comm_c, tree.root),),
    )
