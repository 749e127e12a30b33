"""SnapDeals vanilla proofs: bincode partition proofs, challenges, verifier.

A partition proof (``storage-proofs-update`` ``vanilla.rs``,
``PartitionProof``; rust-filecoin-proofs-api hands it around as bincode
``PartitionProofBytes``)::

    [32] comm_c
    u64 n, then n × [32]        apex_leafs (tree D nodes of this partition)
    u64 m, then m × ChallengeProof:
        MerkleProof proof_r_old (tree R, Poseidon; Single/Sub/Top)
        MerkleProof proof_d_new (tree D, binary SHA-256; Single)
        MerkleProof proof_r_new

with Merkle proofs in the same bincode layout as PoSt's (:mod:`cuzk.circuits.post.vanilla`).
Curio carries a sector's partition proofs as a JSON array of base64 strings.

Challenges of partition k: Poseidon digests ``H(comm_r_new, k·digests + j)``
(the "generate randomness" domain tag) cut into ``bits − log2(partitions)``
bit chunks, with k in the top bits. ``phi = H(comm_d_new, comm_r_old)``,
``rho = H(phi, c >> (bits − h))`` and the new replica is
``r_new = r_old + d_new · rho``.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.algebra.fields import R
from cuzk.circuits import jsondoc
from cuzk.circuits.post.vanilla import (
    SINGLE,
    BincodeReader,
    MerkleProof,
    merkle_proof_bytes,
    read_merkle_proof,
    variant_for_shape,
)
from cuzk.circuits.update.params import UpdateParams, gen_randomness_constants
from cuzk.errors import InputError
from cuzk.hashers.domain import fr_to_le_bytes
from cuzk.hashers.merkle import PathElement, leaf_index, poseidon_path_root, sha256_path_root
from cuzk.hashers.poseidon import hash_ints
from cuzk.hashers.sha256 import sha254_node


@dataclass(frozen=True)
class ChallengeProof:
    proof_r_old: MerkleProof
    proof_d_new: MerkleProof
    proof_r_new: MerkleProof


@dataclass(frozen=True)
class PartitionProof:
    comm_c: int
    apex_leafs: tuple[int, ...]
    challenge_proofs: tuple[ChallengeProof, ...]


def read_partition_proof(data: bytes, source: str = "partition proof") -> PartitionProof:
    r = BincodeReader(data, source)
    comm_c = r.domain("comm_c")
    n = r.length("apex_leafs length", 1 << 12)
    apex = tuple(r.domain(f"apex_leafs[{i}]") for i in range(n))
    m = r.length("challenge_proofs length", 1 << 12)
    proofs = []
    for i in range(m):
        what = f"challenge_proofs[{i}]"
        proofs.append(
            ChallengeProof(
                read_merkle_proof(r, f"{what}.proof_r_old"),
                read_merkle_proof(r, f"{what}.proof_d_new"),
                read_merkle_proof(r, f"{what}.proof_r_new"),
            )
        )
    if r.pos != len(data):
        raise InputError(source, "", f"{len(data) - r.pos} trailing bytes after the proof")
    return PartitionProof(comm_c, apex, tuple(proofs))


def write_partition_proof(p: PartitionProof) -> bytes:
    out = [fr_to_le_bytes(p.comm_c), struct.pack("<Q", len(p.apex_leafs))]
    out += [fr_to_le_bytes(x) for x in p.apex_leafs]
    out.append(struct.pack("<Q", len(p.challenge_proofs)))
    for c in p.challenge_proofs:
        out += [merkle_proof_bytes(x) for x in (c.proof_r_old, c.proof_d_new, c.proof_r_new)]
    return b"".join(out)


def loads_partition_proofs(
    raw: bytes | str, source: str = "vanilla proofs"
) -> list[PartitionProof]:
    """Curio's container: a JSON array of base64 bincode partition proofs."""
    doc = jsondoc.loads(raw, source)
    if not isinstance(doc, list):
        raise InputError(source, "", "expected a JSON array of base64 partition proofs")
    out = []
    for k, item in enumerate(doc):
        if not isinstance(item, str):
            raise InputError(source, f"[{k}]", "expected a base64 string")
        try:
            data = base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError):
            raise InputError(source, f"[{k}]", "not valid base64") from None
        out.append(read_partition_proof(data, f"{source}[{k}]"))
    return out


def dumps_partition_proofs(proofs: Sequence[PartitionProof]) -> bytes:
    items = [base64.b64encode(write_partition_proof(p)).decode() for p in proofs]
    return json.dumps(items, separators=(",", ":")).encode()


# --------------------------------------------------------------------------
# Derived values
# --------------------------------------------------------------------------


def gen_hash(a: int, b: int) -> int:
    return hash_ints([a, b], gen_randomness_constants())


def phi(comm_d_new: int, comm_r_old: int) -> int:
    return gen_hash(comm_d_new, comm_r_old)


def rho(phi_value: int, high: int) -> int:
    return gen_hash(phi_value, high)


def challenges(params: UpdateParams, comm_r_new: int, k: int) -> list[int]:
    """The challenged nodes of partition ``k`` (``Challenges::new``)."""
    bits = params.random_bits_per_challenge
    per_digest = params.challenges_per_digest
    out = []
    digest_index = k * params.digests_per_partition
    while len(out) < params.challenge_count:
        digest = gen_hash(comm_r_new, digest_index)
        for i in range(per_digest):
            if len(out) == params.challenge_count:
                break
            c = (digest >> (i * bits)) & ((1 << bits) - 1)
            out.append(c | (k << bits))
        digest_index += 1
    return out


def public_inputs(
    params: UpdateParams, k: int, h: int, comm_r_old: int, comm_d_new: int, comm_r_new: int
) -> list[int]:
    return [params.k_and_h_select(k, h), comm_r_old, comm_d_new, comm_r_new]


# --------------------------------------------------------------------------
# The verifier
# --------------------------------------------------------------------------


@dataclass
class UpdateVerifier:
    params: UpdateParams
    source: str = "partition proof"

    def fail(self, field: str, problem: str) -> InputError:
        return InputError(self.source, field, problem)

    def _shape(self, p: MerkleProof, what: str, variant: int, arities: tuple[int, ...]) -> None:
        if p.variant != variant or len(p.path) != len(arities):
            raise self.fail(what, f"expected a variant-{variant} path of {len(arities)} levels")
        for i, (e, a) in enumerate(zip(p.path, arities, strict=True)):
            if len(e.hashes) != a - 1:
                raise self.fail(f"{what} level {i}", f"expected {a - 1} siblings")

    def verify(
        self,
        proof: PartitionProof,
        k: int,
        h: int,
        comm_r_old: int,
        comm_d_new: int,
        comm_r_new: int,
    ) -> None:
        """Raise InputError unless ``proof`` is partition ``k``'s valid proof."""
        p = self.params
        if not 0 <= k < p.partition_count:
            raise self.fail("k", f"partition {k} of {p.partition_count}")
        p.h_select(h)
        if len(proof.apex_leafs) != p.apex_leaf_count:
            raise self.fail("apex_leafs", f"expected {p.apex_leaf_count} apex leaves")
        if len(proof.challenge_proofs) != p.challenge_count:
            raise self.fail("challenge_proofs", f"expected {p.challenge_count} challenge proofs")
        apex_rows = [list(proof.apex_leafs)]
        while len(apex_rows[-1]) > 1:
            row = apex_rows[-1]
            apex_rows.append([_sha2(row[i], row[i + 1]) for i in range(0, len(row), 2)])
        first = proof.challenge_proofs[0]
        root_r_old, root_r_new = first.proof_r_old.root, first.proof_r_new.root
        if hash_ints([proof.comm_c, root_r_old]) != comm_r_old:
            raise self.fail("comm_c", "Poseidon(comm_c, root of tree R old) is not comm_r_old")
        if hash_ints([proof.comm_c, root_r_new]) != comm_r_new:
            raise self.fail("comm_c", "Poseidon(comm_c, root of tree R new) is not comm_r_new")
        phi_value = phi(comm_d_new, comm_r_old)
        shift = p.challenge_bit_len - h
        variant = variant_for_shape(p.tree_shape.sub, p.tree_shape.top)
        d_arities = (2,) * p.challenge_bit_len
        for i, (c, cp) in enumerate(
            zip(challenges(p, comm_r_new, k), proof.challenge_proofs, strict=True)
        ):
            what = f"challenge_proofs[{i}]"
            for name, mp, root, arities, var in (
                ("proof_r_old", cp.proof_r_old, root_r_old, p.tree_r_arities, variant),
                ("proof_d_new", cp.proof_d_new, comm_d_new, d_arities, SINGLE),
                ("proof_r_new", cp.proof_r_new, root_r_new, p.tree_r_arities, variant),
            ):
                self._shape(mp, f"{what}.{name}", var, arities)
                if leaf_index(mp.path) != c:
                    raise self.fail(
                        f"{what}.{name}", f"opens leaf {leaf_index(mp.path)}, not challenge {c}"
                    )
                if mp.root != root:
                    raise self.fail(f"{what}.{name}.root", "is not the expected root")
                computed = (
                    sha256_root_int(mp.leaf, mp.path)
                    if name == "proof_d_new"
                    else poseidon_path_root(mp.leaf, mp.path)
                )
                if computed != mp.root:
                    raise self.fail(f"{what}.{name}", "the path does not hash to its root")
            expected = (cp.proof_r_old.leaf + cp.proof_d_new.leaf * rho(phi_value, c >> shift)) % R
            if expected != cp.proof_r_new.leaf:
                raise self.fail(f"{what}.proof_r_new.leaf", "is not r_old + d_new · rho")
            apex_path = cp.proof_d_new.path[
                p.apex_leafs_height : p.apex_leafs_height + p.apex_leaf_bit_len
            ]
            for j, (e, row) in enumerate(zip(apex_path, apex_rows, strict=False)):
                if e.hashes[0] not in row:
                    raise self.fail(
                        f"{what}.proof_d_new level {p.apex_leafs_height + j}",
                        "is not in the apex tree",
                    )


def _sha2(a: int, b: int) -> int:
    return int.from_bytes(sha254_node(fr_to_le_bytes(a), fr_to_le_bytes(b)), "little")


def sha256_root_int(leaf: int, path: Sequence[PathElement]) -> int:
    as_bytes = [PathElement(tuple(fr_to_le_bytes(h) for h in e.hashes), e.index) for e in path]
    return int.from_bytes(sha256_path_root(fr_to_le_bytes(leaf), as_bytes), "little")
