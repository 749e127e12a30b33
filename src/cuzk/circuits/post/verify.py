"""The PoSt vanilla verifier (what ``FallbackPoSt::verify`` checks, per sector).

It checks the vanilla sector proof as Curio sends it: for WinningPoSt one
proof with 66 inclusion proofs, which rust-fil-proofs unrolls into 66
one-challenge sector proofs before its check; slot i's challenge index is i,
which is vanilla challenge i here, so the two checks accept the same proofs.

For a sector with public ``comm_r`` at position ``sector_index`` of its
partition, a vanilla proof is valid when:

1. ``comm_r = Poseidon2(comm_c, comm_r_last)`` with ``comm_r_last`` the root
   of the first inclusion proof;
2. there are exactly ``challenge_count`` inclusion proofs, all with root
   ``comm_r_last``;
3. each has the tree's shape (variant, path length, arity per level);
4. each path hashes its leaf up to the root;
5. proof n's leaf index is challenge n derived from the randomness.

:func:`check_sector_proof` raises :class:`~cuzk.errors.InputError` naming
the first failing check; :func:`verify_sector_proof` returns a bool.
"""

from __future__ import annotations

from cuzk.circuits.post.challenges import sector_leaf_challenges
from cuzk.circuits.post.config import PoStConfig, format_sector_size
from cuzk.circuits.post.vanilla import FallbackPoStSectorProof, variant_for_shape
from cuzk.errors import InputError
from cuzk.hashers.merkle import leaf_index, poseidon_path_root
from cuzk.hashers.poseidon import hash2


def check_sector_shape(config: PoStConfig, proof: FallbackPoStSectorProof, source: str) -> None:
    """Raise InputError unless every inclusion path of ``proof`` has the arities of
    ``config``'s sector size: a request's cheap first check (no hashing, linear in
    its paths), so that a proof of another size is refused before a key is made."""
    arities = list(config.arities)
    for s, sp in enumerate(proof.sectors):
        for n, ip in enumerate(sp.inclusion_proofs):
            got = [el.arity for el in ip.path]
            if got == arities:
                continue
            size = 32
            for a in got:
                size *= a
            raise InputError(
                source,
                f"vanilla_proof.sectors[{s}].inclusion_proofs[{n}]",
                f"sector {proof.sector_id}: a path of a {format_sector_size(size)} sector; "
                f"the {config.circuit_id} circuit is for {format_sector_size(config.sector_size)} "
                "sectors: send the registered_proof (or sector_size) of the proofs' size",
            )


def check_sector_proof(
    config: PoStConfig,
    randomness: bytes,
    proof: FallbackPoStSectorProof,
    comm_r: int | None = None,
    sector_index: int = 0,
    source: str = "vanilla proof",
) -> None:
    """Raise InputError unless ``proof`` is a valid vanilla proof (see module doc)."""
    sid = proof.sector_id
    if comm_r is not None and proof.comm_r != comm_r:
        raise InputError(source, "comm_r", f"sector {sid}: comm_r differs from the public comm_r")
    if len(proof.sectors) != 1:
        raise InputError(source, "vanilla_proof.sectors", f"expected 1, got {len(proof.sectors)}")
    sp = proof.sectors[0]
    what = "vanilla_proof.sectors[0]"
    if len(sp.inclusion_proofs) != config.challenge_count:
        raise InputError(
            source,
            f"{what}.inclusion_proofs",
            f"sector {sid}: {len(sp.inclusion_proofs)} inclusion proofs, "
            f"the {config.circuit_id} circuit needs {config.challenge_count}",
        )
    comm_r_last = sp.inclusion_proofs[0].root
    if hash2(sp.comm_c, comm_r_last) != proof.comm_r:
        raise InputError(source, what, f"sector {sid}: Poseidon(comm_c, comm_r_last) != comm_r")
    if sp.comm_r_last != comm_r_last:
        raise InputError(
            source, f"{what}.comm_r_last", f"sector {sid}: differs from the proofs' root"
        )
    shape = config.shape
    arities = list(config.arities)
    n_base = len(arities) - (1 if shape.sub else 0) - (1 if shape.top else 0)
    variant = variant_for_shape(shape.sub, shape.top)
    challenges = sector_leaf_challenges(config, randomness, sid, sector_index)
    for n, ip in enumerate(sp.inclusion_proofs):
        field = f"{what}.inclusion_proofs[{n}]"
        if ip.variant != variant:
            raise InputError(source, field, f"sector {sid}: wrong proof variant for this shape")
        if (len(ip.base), len(ip.sub), len(ip.top)) != (
            n_base,
            1 if shape.sub else 0,
            1 if shape.top else 0,
        ):
            raise InputError(source, field, f"sector {sid}: wrong path length for this sector size")
        if [el.arity for el in ip.path] != arities:
            raise InputError(source, field, f"sector {sid}: wrong arity in the path")
        if ip.root != comm_r_last:
            raise InputError(source, f"{field}.root", f"sector {sid}: root is not comm_r_last")
        if poseidon_path_root(ip.leaf, ip.path) != ip.root:
            raise InputError(source, field, f"sector {sid}: the path does not hash to the root")
        if leaf_index(ip.path) != challenges[n]:
            raise InputError(
                source,
                field,
                f"sector {sid}: proves leaf {leaf_index(ip.path)}, "
                f"challenge {n} is {challenges[n]}",
            )


def verify_sector_proof(
    config: PoStConfig,
    randomness: bytes,
    proof: FallbackPoStSectorProof,
    comm_r: int | None = None,
    sector_index: int = 0,
) -> bool:
    try:
        check_sector_proof(config, randomness, proof, comm_r, sector_index)
    except InputError:
        return False
    return True
