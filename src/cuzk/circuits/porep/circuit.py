"""The StackedDRG PoRep circuit of one partition, in bellperson's exact layout.

Follows ``storage-proofs-porep/src/stacked/circuit/{proof,params,create_label}.rs``:

1. ``replica_id`` (input), its 255 bits; ``comm_d``, ``comm_r`` (inputs);
   ``comm_r_last``, ``comm_c`` (private); ``comm_r = Poseidon2(comm_c, comm_r_last)``.
2. Per challenge (one :class:`~cuzk.gadgets.subcircuit.Subcircuit`, replicated):
   the data leaf proven in tree D (SHA-256); the 6 DRG and 8 expander parent
   columns allocated, hashed (Poseidon of arity ``layers``) and proven in
   tree C; the challenge as 64 bits packed into an input; for each layer the
   parents' labels decomposed to bits and the label recomputed with SHA-256
   (one Subcircuit per layer); ``key + data_leaf`` proven in tree R; the
   recomputed column hashed and proven in tree C.

Every Merkle inclusion packs its index bits into one public input, so a
challenge contributes 18 inputs: tree D, 14 parents, the challenge, tree R,
tree C — :func:`public_inputs` builds that vector.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.circuits.porep.params import BASE_DEGREE, EXP_DEGREE, TOTAL_PARENTS, SectorParams
from cuzk.circuits.porep.sha_blocks import sha256_blocks
from cuzk.gadgets.boolean import AllocatedBit, Boolean, u64_into_boolean_vec_le
from cuzk.gadgets.merkle import POSEIDON, SHA256, level_subcircuit, poseidon_subcircuit
from cuzk.gadgets.multipack import pack_bits, pack_into_inputs
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import BIT, NUM, Subcircuit, call
from cuzk.hashers.merkle import TreeShape
from cuzk.r1cs import ONE

FR_BITS = 255
CHALLENGE_BITS = 64


@dataclass(frozen=True)
class PoRepShape:
    """What fixes the circuit's structure: graph size, layers, challenges, tree shape."""

    nodes: int
    layers: int
    challenges: int
    tree_shape: TreeShape

    @staticmethod
    def of(sector: SectorParams) -> PoRepShape:
        return PoRepShape(
            sector.nodes, sector.layers, sector.challenges_per_partition, sector.tree_shape
        )

    @property
    def tree_d_arities(self) -> tuple[int, ...]:
        return (2,) * (self.nodes.bit_length() - 1)

    @property
    def tree_arities(self) -> tuple[int, ...]:
        return tuple(self.tree_shape.arities(self.nodes))

    @property
    def challenge_key(self) -> str:
        """Names one challenge's shape (independent of the challenge count)."""
        s = self.tree_shape
        return f"porep/{self.nodes}/{self.layers}/{s.base}-{s.sub}-{s.top}/challenge"

    @property
    def key(self) -> str:
        """Names the whole partition circuit."""
        s = self.tree_shape
        return f"porep/{self.nodes}/{self.layers}/{s.base}-{s.sub}-{s.top}/x{self.challenges}"

    @property
    def num_inputs(self) -> int:
        """Public inputs, ONE included."""
        return 1 + 3 + self.challenges * (BASE_DEGREE + EXP_DEGREE + 4)


# --------------------------------------------------------------------------
# Witness hints (plain ints, or lane vectors when many instances run at once)
# --------------------------------------------------------------------------

# (position, sibling values), or with the node the level hashes to third
Level = tuple[Any, ...]


@dataclass(frozen=True)
class ChallengeHints:
    """Everything one challenge's synthesis reads that is not a port."""

    data_leaf: Any
    d_path: Sequence[Level]
    drg_columns: Sequence[Sequence[Any]]  # 6 × layers
    drg_paths: Sequence[Sequence[Level]]
    exp_columns: Sequence[Sequence[Any]]  # 8 × layers
    exp_paths: Sequence[Sequence[Level]]
    challenge: Any
    r_path: Sequence[Level]
    c_path: Sequence[Level]
    # the hashes of the 14 parent columns, then of the challenged column (its
    # labels): values for the device witness's column-hash calls
    column_hashes: Sequence[Any] = ()


@dataclass(frozen=True)
class PartitionHints:
    replica_id: Any
    comm_d: Any
    comm_r: Any
    comm_r_last: Any
    comm_c: Any
    challenges: Sequence[ChallengeHints]


# --------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------


def reverse_bit_numbering(bits: Sequence[Boolean]) -> list[Boolean]:
    """Pad to whole bytes with constant zeros, then reverse the bits of each byte."""
    padded = list(bits)
    while len(padded) % 8:
        padded.append(Boolean.constant(False))
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def enforce_inclusion(
    cs: Any,
    hasher: str,
    arities: Sequence[int],
    leaf: AllocatedNum,
    root: AllocatedNum,
    levels: Sequence[Level] | None,
) -> None:
    """PoRCircuit with an already allocated leaf and root (``Root::Var``)."""
    cur = leaf
    path_bits: list[Boolean] = []
    for i, arity in enumerate(arities):
        out = call(
            cs, level_subcircuit(hasher, arity), [cur], None if levels is None else levels[i]
        )
        cur = out[0]
        path_bits.extend(Boolean.of(b) for b in out[1:])
    pack_into_inputs(cs, path_bits)
    cs.enforce("enforce root is correct", cur.variable, ONE, root.variable)


def create_label(
    cs: Any,
    replica_id_bits: Sequence[Boolean],
    parents: Sequence[Sequence[Boolean]],
    layer: int,
    node_bits_le: Sequence[Boolean],
) -> AllocatedNum:
    """``create_label_circuit``: SHA-256 over replica id, layer, node and 37 parents."""
    assert len(parents) == TOTAL_PARENTS
    message = list(replica_id_bits)
    while len(message) < 256:
        message.append(Boolean.constant(False))
    message += [Boolean.constant(bool((layer >> i) & 1)) for i in range(31, -1, -1)]
    message += list(reversed(node_bits_le))
    while len(message) < 512:
        message.append(Boolean.constant(False))
    for p in parents:
        message += p
        while len(message) % 256:
            message.append(Boolean.constant(False))
    digest = reverse_bit_numbering(sha256_blocks(cs, message))
    return pack_bits(cs, digest[:254])


def expand_parents(parents: list[list[Boolean]], layer: int) -> list[list[Boolean]]:
    """The parents' bit vectors repeated to the 37 hashed slots."""
    if layer > 1:
        return parents + parents + parents[:9]
    return parents * 6 + [parents[0]]


@functools.cache
def label_subcircuit(layer: int) -> Subcircuit:
    """One layer's label: ports = 255 replica-id bits, 64 challenge bits (LE),
    6 DRG parent labels (this layer), and for layer > 1 the 8 expander parent
    labels (the layer below). Output: the label."""
    n_parents = BASE_DEGREE + (EXP_DEGREE if layer > 1 else 0)

    def synth(cs: Any, ports: list, hints: Any) -> list:
        rid = reverse_bit_numbering([Boolean.of(b) for b in ports[:FR_BITS]])
        node = [Boolean.of(b) for b in ports[FR_BITS : FR_BITS + CHALLENGE_BITS]]
        values = ports[FR_BITS + CHALLENGE_BITS :]
        bits = [reverse_bit_numbering(v.to_bits_le(cs)) for v in values]
        return [create_label(cs, rid, expand_parents(bits, layer), layer, node)]

    ports = (BIT,) * (FR_BITS + CHALLENGE_BITS) + (NUM,) * n_parents
    return Subcircuit(f"porep-label/layer-{layer}", ports, synth)


def _column(cs: Any, rows: Sequence[Any] | None, layers: int) -> list[AllocatedNum]:
    rows = rows if rows is not None else [None] * layers
    return [AllocatedNum.alloc(cs, v, "column_num_row") for v in rows]


def synthesize_challenge(
    cs: Any,
    shape: PoRepShape,
    comm_d: AllocatedNum,
    comm_c: AllocatedNum,
    comm_r_last: AllocatedNum,
    replica_id_bits: Sequence[AllocatedBit],
    h: ChallengeHints | None,
) -> None:
    """``stacked::circuit::params::Proof::synthesize`` for one challenge."""
    L = shape.layers
    data_leaf = AllocatedNum.alloc(cs, None if h is None else h.data_leaf, "data_leaf")
    enforce_inclusion(cs, SHA256, shape.tree_d_arities, data_leaf, comm_d, h and h.d_path)

    columns: list[list[AllocatedNum]] = []
    for kind, count in (("drg", BASE_DEGREE), ("exp", EXP_DEGREE)):
        for i in range(count):
            rows = None if h is None else (h.drg_columns if kind == "drg" else h.exp_columns)[i]
            path = None if h is None else (h.drg_paths if kind == "drg" else h.exp_paths)[i]
            col = _column(cs, rows, L)
            value = None if h is None else h.column_hashes[len(columns)]
            (val,) = call(cs, poseidon_subcircuit(L), col, value)
            enforce_inclusion(cs, POSEIDON, shape.tree_arities, val, comm_c, path)
            columns.append(col)

    challenge_bits = u64_into_boolean_vec_le(cs, None if h is None else h.challenge)
    pack_into_inputs(cs, challenge_bits)

    labels: list[AllocatedNum] = []
    for layer in range(1, L + 1):
        drg = [col[layer - 1] for col in columns[:BASE_DEGREE]]
        exp = [col[layer - 2] for col in columns[BASE_DEGREE:]] if layer > 1 else []
        ports = [*replica_id_bits, *(b.bit for b in challenge_bits), *drg, *exp]
        (label,) = call(cs, label_subcircuit(layer), ports)
        labels.append(label)

    encoded = labels[-1].add(cs, data_leaf)  # encode: key + data, one constraint
    enforce_inclusion(cs, POSEIDON, shape.tree_arities, encoded, comm_r_last, h and h.r_path)
    value = None if h is None else h.column_hashes[BASE_DEGREE + EXP_DEGREE]
    (column_hash,) = call(cs, poseidon_subcircuit(L), labels, value)
    enforce_inclusion(cs, POSEIDON, shape.tree_arities, column_hash, comm_c, h and h.c_path)


@functools.cache
def challenge_subcircuit(shape: PoRepShape) -> Subcircuit:
    """Ports: comm_d, comm_c, comm_r_last, then the 255 replica-id bits."""

    def synth(cs: Any, ports: list, hints: Any) -> list:
        synthesize_challenge(cs, shape, ports[0], ports[1], ports[2], ports[3:], hints)
        return []

    return Subcircuit(shape.challenge_key, (NUM, NUM, NUM) + (BIT,) * FR_BITS, synth)


def synthesize(cs: Any, shape: PoRepShape, hints: PartitionHints | None) -> None:
    """``StackedCircuit::synthesize`` for one partition."""
    h = hints
    replica_id = AllocatedNum.alloc(cs, h and h.replica_id, "replica_id")
    replica_id.inputize(cs)
    rid_bits = [b.bit for b in replica_id.to_bits_le(cs)]
    comm_d = AllocatedNum.alloc(cs, h and h.comm_d, "comm_d")
    comm_d.inputize(cs)
    comm_r = AllocatedNum.alloc(cs, h and h.comm_r, "comm_r")
    comm_r.inputize(cs)
    comm_r_last = AllocatedNum.alloc(cs, h and h.comm_r_last, "comm_r_last")
    comm_c = AllocatedNum.alloc(cs, h and h.comm_c, "comm_c")
    # the hash's value is comm_r: given as the call's hint, as the challenges give
    # their column hashes (at 2 layers those calls share this subcircuit)
    (hashed,) = call(cs, poseidon_subcircuit(2), [comm_c, comm_r_last], h and h.comm_r)
    cs.enforce("enforce comm_r = H(comm_c || comm_r_last)", comm_r.variable, ONE, hashed.variable)
    sub = challenge_subcircuit(shape)
    for i in range(shape.challenges):
        ports = [comm_d, comm_c, comm_r_last, *rid_bits]
        call(cs, sub, ports, None if h is None else h.challenges[i])


@functools.cache
def partition_subcircuit(shape: PoRepShape) -> Subcircuit:
    """The whole partition circuit as a port-less subcircuit (what gets compiled)."""

    def synth(cs: Any, ports: list, hints: Any) -> list:
        synthesize(cs, shape, hints)
        return []

    return Subcircuit(shape.key, (), synth)
