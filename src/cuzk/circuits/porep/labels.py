"""SDR labels, the parents hashed into them, and the replica encoding.

The label of ``node`` in ``layer`` (1-based) is

    sha254(replica_id ‖ u32_be(layer) ‖ u64_be(node) ‖ 0^20 ‖ p_1 ‖ … ‖ p_37)

where p_1..p_37 are parent labels: in layer 1 the 6 DRG parents (same
layer), cycled to 37; in later layers the 6 DRG parents (same layer) and the
8 expander parents (previous layer), cycled to 37. Node 0 has no parents: its
label hashes the 64-byte prefix alone (``create_label/single.rs``).

The sealed replica's node is ``key + data`` in Fr, the key being the last
layer's label (``encode.rs``).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.algebra.fields import R
from cuzk.circuits.porep.params import BASE_DEGREE, TOTAL_PARENTS
from cuzk.hashers.sha256 import sha254


def label_prefix(replica_id: bytes, layer: int, node: int) -> bytes:
    return replica_id + layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)


def cycle_parents(parents: Sequence[bytes]) -> list[bytes]:
    """The parent labels repeated to fill the 37 hashed slots."""
    return [parents[i % len(parents)] for i in range(TOTAL_PARENTS)]


def layer_parents(
    layer: int, drg_rows: Sequence[Sequence[bytes]], exp_rows: Sequence[Sequence[bytes]]
) -> list[bytes]:
    """The 37 labels hashed into a label of ``layer``, from the parents' columns.

    ``drg_rows[i]`` / ``exp_rows[i]`` are the columns (one label per layer) of
    the i-th DRG / expander parent.
    """
    chosen = [col[layer - 1] for col in drg_rows[:BASE_DEGREE]]
    if layer > 1:
        chosen += [col[layer - 2] for col in exp_rows]
    return cycle_parents(chosen)


def create_label(replica_id: bytes, layer: int, node: int, parents: Sequence[bytes]) -> bytes:
    """The label from its 37 parent labels (or none, for node 0)."""
    if parents and len(parents) != TOTAL_PARENTS:
        raise ValueError(f"a label hashes {TOTAL_PARENTS} parents, not {len(parents)}")
    return sha254(label_prefix(replica_id, layer, node) + b"".join(parents))


def encode(key: bytes, data: bytes) -> bytes:
    """The replica node: key + data in Fr (both little-endian domain values)."""
    v = (int.from_bytes(key, "little") + int.from_bytes(data, "little")) % R
    return v.to_bytes(32, "little")
