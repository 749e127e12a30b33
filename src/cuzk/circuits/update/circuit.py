"""The EmptySectorUpdate (SnapDeals) circuit of one partition, bellperson's layout.

Follows ``storage-proofs-update/src/{circuit,gadgets}.rs`` and
``storage-proofs-core``'s ``por_no_challenge_input``:

1. ``k_and_h_select`` (input) and its bits (partition bits, then the six
   h-select bits) with one packing constraint; the partition packed again;
   ``comm_r_old``, ``comm_d_new``, ``comm_r_new`` (inputs);
   ``phi = H_gen(comm_d_new, comm_r_old)``; ``comm_c``, the two tree R
   roots, the apex leaves and the partition path (private);
   ``comm_r_old = H(comm_c, root_r_old)``, same for ``comm_r_new``.
2. The apex tree (SHA-256 over the apex leaves) proven under ``comm_d_new``
   along the partition path.
3. The challenges as bits of Poseidon digests of ``comm_r_new``.
4. Per challenge (one :class:`Subcircuit`, replicated): the selected
   ``h`` high bits, ``rho``, ``r_new = r_old + d_new · rho``, both tree R
   paths, and tree D from the leaf up to its apex leaf.

Merkle levels are subcircuits taking their index bits and siblings as ports
(rust allocates all siblings of a path before hashing it), so a witness plan
runs every level of every challenge in one pass.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.circuits.update.params import UpdateParams, gen_randomness_constants
from cuzk.gadgets.boolean import AllocatedBit, Boolean, field_into_allocated_bits_le
from cuzk.gadgets.insertion import insert, select
from cuzk.gadgets.merkle import POSEIDON, SHA256, hash_node
from cuzk.gadgets.multipack import pack_bits
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.gadgets.subcircuit import BIT, NUM, Subcircuit, call
from cuzk.gadgets.values import values_of
from cuzk.r1cs import ONE, LinearCombination

FR_BITS = 255


# --------------------------------------------------------------------------
# Hints
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ChallengeHints:
    leaf_r_old: Any
    leaf_d_new: Any
    path_r_old: Sequence[Sequence[Any]]  # siblings per level
    path_r_new: Sequence[Sequence[Any]]
    path_to_apex: Sequence[Any]  # one sibling per tree D level below the apex leaf


@dataclass(frozen=True)
class PartitionHints:
    k_and_h_select: Any
    comm_r_old: Any
    comm_d_new: Any
    comm_r_new: Any
    comm_c: Any
    root_r_old: Any
    root_r_new: Any
    apex_leafs: Sequence[Any]
    partition_path: Sequence[Any]  # tree D siblings above the apex root
    challenges: Sequence[ChallengeHints]


# --------------------------------------------------------------------------
# Gadgets
# --------------------------------------------------------------------------


@functools.cache
def gen_hash_subcircuit() -> Subcircuit:
    """Poseidon arity 2 with the "generate randomness" domain tag."""
    c = gen_randomness_constants()

    def synth(cs: Any, ports: list, hints: Any) -> list:
        return [poseidon_hash(cs, ports, c)]

    return Subcircuit("poseidon-gen-randomness/2", (NUM, NUM), synth)


def gen_hash(cs: Any, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    return call(cs, gen_hash_subcircuit(), [a, b])[0]


def num_to_bits(cs: Any, num: AllocatedNum) -> list[AllocatedBit]:
    """``allocated_num_to_allocated_bits``: 255 bits, Σ 2^i·b_i · 1 = num."""
    bits = field_into_allocated_bits_le(cs, num.value)
    lc = LinearCombination()
    coeff = 1
    for b in bits:
        lc.add_term(b.variable, coeff)
        coeff *= 2
    cs.enforce("binary decomp", lc, ONE, num.variable)
    return bits


@functools.cache
def level_subcircuit(hasher: str, arity: int) -> Subcircuit:
    """One level of ``por_no_challenge_input``: insert ``cur`` at the position
    given by the bits among the siblings and hash. Ports: cur, index bits
    (least significant first), siblings. Output: the parent."""
    nbits = arity.bit_length() - 1

    def synth(cs: Any, ports: list, hints: Any) -> list:
        cur, bits, siblings = ports[0], ports[1 : 1 + nbits], ports[1 + nbits :]
        children = insert(cs, cur, [Boolean.of(b) for b in bits], siblings)
        return [hash_node(cs, hasher, children)]

    return Subcircuit(
        f"por-level/{hasher}/{arity}", (NUM,) + (BIT,) * nbits + (NUM,) * (arity - 1), synth
    )


def por_no_challenge_input(
    cs: Any,
    hasher: str,
    arities: Sequence[int],
    bits: Sequence[AllocatedBit],
    leaf: AllocatedNum,
    siblings: Sequence[Sequence[AllocatedNum]],
    root: AllocatedNum,
) -> None:
    cur, used = leaf, 0
    for arity, sib in zip(arities, siblings, strict=True):
        nbits = arity.bit_length() - 1
        ports = [cur, *bits[used : used + nbits], *sib]
        (cur,) = call(cs, level_subcircuit(hasher, arity), ports)
        used += nbits
    assert used == len(bits), "challenge bit-length and tree arity do not agree"
    cs.enforce("calculated root == provided root", cur.variable, ONE, root.variable)


def challenge_high_bits(
    cs: Any,
    c_bits: Sequence[AllocatedBit],
    h_select_bits: Sequence[AllocatedBit],
    hs: Sequence[int],
) -> AllocatedNum:
    V = values_of(cs)
    n = len(c_bits)
    chosen = []
    for h, sel in zip(hs, h_select_bits, strict=True):
        c_high = pack_bits(cs, [Boolean.of(b) for b in c_bits[n - h :]])
        value = V.mul(c_high.value, V.from_bit(sel.value))
        var = cs.alloc("c_high_or_zero", value)
        cs.enforce("c_high_or_zero == c_high * h_select_bit", c_high.variable, sel.variable, var)
        chosen.append(AllocatedNum(var, value))
    total = chosen[0].value
    for x in chosen[1:]:
        total = V.add(total, x.value)
    selected = cs.alloc("c_high_selected", total)
    lc = LinearCombination()
    for x in chosen:
        lc.add_term(x.variable, 1)
    cs.enforce("c_high_selected == dot(c_highs, h_select_bits)", lc, ONE, selected)
    return AllocatedNum(selected, total)


def _alloc_path(cs: Any, path: Sequence[Sequence[Any]] | None, shape: Sequence[int]) -> list:
    if path is None:
        path = [[None] * (a - 1) for a in shape]
    return [[AllocatedNum.alloc(cs, v, "path sibling") for v in level] for level in path]


@functools.cache
def challenge_subcircuit(params: UpdateParams) -> Subcircuit:
    """Ports: phi, root_r_old, root_r_new, the apex leaves, the challenge's
    bits (least significant first, partition bits on top), the h-select bits."""
    p = params
    n_apex, n_bits, n_h = p.apex_leaf_count, p.challenge_bit_len, len(p.hs)

    def synth(cs: Any, ports: list, h: Any) -> list:
        phi, root_r_old, root_r_new = ports[:3]
        apex = ports[3 : 3 + n_apex]
        c_bits = ports[3 + n_apex : 3 + n_apex + n_bits]
        h_select = ports[3 + n_apex + n_bits :]
        c_high = challenge_high_bits(cs, c_bits, h_select, p.hs)
        rho = gen_hash(cs, phi, c_high)
        leaf_r_old = AllocatedNum.alloc(cs, h and h.leaf_r_old, "leaf_r_old")
        leaf_d_new = AllocatedNum.alloc(cs, h and h.leaf_d_new, "leaf_d_new")
        product = leaf_d_new.mul(cs, rho)
        V = values_of(cs)
        value = V.add(leaf_r_old.value, product.value)
        var = cs.alloc("label_r_new", value)
        cs.enforce(
            "label_r_new == label_r_old + label_d_new * rho",
            leaf_r_old.variable + product.variable,
            ONE,
            var,
        )
        leaf_r_new = AllocatedNum(var, value)
        arities = p.tree_r_arities
        path = _alloc_path(cs, h and h.path_r_old, arities)
        por_no_challenge_input(cs, POSEIDON, arities, c_bits, leaf_r_old, path, root_r_old)
        path = _alloc_path(cs, h and h.path_r_new, arities)
        por_no_challenge_input(cs, POSEIDON, arities, c_bits, leaf_r_new, path, root_r_new)
        height = p.apex_leafs_height
        apex_bits = [Boolean.of(b) for b in c_bits[height : height + p.apex_leaf_bit_len]]
        apex_leaf = select(cs, apex, apex_bits)
        sibs = [[None]] * height if h is None else [[x] for x in h.path_to_apex]
        path = _alloc_path(cs, sibs, (2,) * height)
        por_no_challenge_input(
            cs, SHA256, (2,) * height, c_bits[:height], leaf_d_new, path, apex_leaf
        )
        return []

    ports = (NUM, NUM, NUM) + (NUM,) * n_apex + (BIT,) * n_bits + (BIT,) * n_h
    return Subcircuit(f"snap/{p.sector_nodes}/challenge", ports, synth)


def synthesize(cs: Any, params: UpdateParams, h: PartitionHints | None) -> None:
    """``EmptySectorUpdateCircuit::synthesize``."""
    p = params
    V = values_of(cs)
    k_and_h = AllocatedNum.alloc(cs, h and h.k_and_h_select, "k_and_h_select")
    k_and_h.inputize(cs)
    n_sel = p.partition_bit_len + len(p.hs)
    bit_values = V.bits_le(k_and_h.value, n_sel)
    sel_bits = [AllocatedBit.alloc(cs, b) for b in bit_values]
    lc = LinearCombination()
    coeff = 1
    for b in sel_bits:
        lc.add_term(b.variable, coeff)
        coeff *= 2
    cs.enforce("k_and_h_select binary decomp", lc, ONE, k_and_h.variable)
    partition_bits = sel_bits[: p.partition_bit_len]
    h_select_bits = sel_bits[p.partition_bit_len :]
    partition = pack_bits(cs, [Boolean.of(b) for b in partition_bits])
    comm_r_old = AllocatedNum.alloc(cs, h and h.comm_r_old, "comm_r_old")
    comm_r_old.inputize(cs)
    comm_d_new = AllocatedNum.alloc(cs, h and h.comm_d_new, "comm_d_new")
    comm_d_new.inputize(cs)
    comm_r_new = AllocatedNum.alloc(cs, h and h.comm_r_new, "comm_r_new")
    comm_r_new.inputize(cs)
    phi = gen_hash(cs, comm_d_new, comm_r_old)
    comm_c = AllocatedNum.alloc(cs, h and h.comm_c, "comm_c")
    root_r_old = AllocatedNum.alloc(cs, h and h.root_r_old, "root_r_old")
    root_r_new = AllocatedNum.alloc(cs, h and h.root_r_new, "root_r_new")
    apex = [
        AllocatedNum.alloc(cs, None if h is None else h.apex_leafs[i], "apex_leaf")
        for i in range(p.apex_leaf_count)
    ]
    partition_path = [
        AllocatedNum.alloc(cs, None if h is None else h.partition_path[i], "partition_path_sibling")
        for i in range(p.partition_bit_len)
    ]
    for comm, root in ((comm_r_old, root_r_old), (comm_r_new, root_r_new)):
        (calc,) = call(cs, _poseidon2(), [comm_c, root])
        cs.enforce("enforce comm_r_calc == comm_r", calc.variable, ONE, comm.variable)

    # apex tree, then its root under comm_d_new along the partition path
    row = apex
    while len(row) > 1:
        row = [hash_node(cs, SHA256, [row[i], row[i + 1]]) for i in range(0, len(row), 2)]
    por_no_challenge_input(
        cs,
        SHA256,
        (2,) * p.partition_bit_len,
        partition_bits,
        row[0],
        [[s] for s in partition_path],
        comm_d_new,
    )

    # challenge bits from Poseidon digests of comm_r_new
    per_digest, bits_per = p.challenges_per_digest, p.random_bits_per_challenge
    digests = p.digests_per_partition
    generated: list[list[AllocatedBit]] = []
    for j in range(digests):
        value = V.add(V.mul(partition.value, digests), j)
        index = cs.alloc("digest_index", value)
        cs.enforce(
            "digest_index == k * digests_per_partition + j",
            LinearCombination({partition.variable: digests}) + LinearCombination.of(j),
            ONE,
            index,
        )
        digest = gen_hash(cs, comm_r_new, AllocatedNum(index, value))
        bits = num_to_bits(cs, digest)
        take = p.challenge_count - len(generated) if j == digests - 1 else per_digest
        for t in range(take):
            generated.append(bits[t * bits_per : (t + 1) * bits_per])

    sub = challenge_subcircuit(p)
    for i, c_bits in enumerate(generated):
        ports = [phi, root_r_old, root_r_new, *apex, *c_bits, *partition_bits, *h_select_bits]
        call(cs, sub, ports, None if h is None else h.challenges[i])


@functools.cache
def _poseidon2() -> Subcircuit:
    from cuzk.gadgets.merkle import poseidon_subcircuit

    return poseidon_subcircuit(2)


@functools.cache
def partition_subcircuit(params: UpdateParams) -> Subcircuit:
    def synth(cs: Any, ports: list, hints: Any) -> list:
        synthesize(cs, params, hints)
        return []

    return Subcircuit(f"snap/{params.sector_nodes}", (), synth)
