"""The StackedDRG graph: each node's 6 DRG parents and 8 expander parents.

- DRG parents (``storage-proofs-core`` ``drgraph.rs``, bucket sampling):
  for node v ≥ 2, a ChaCha8 generator seeded with ``drg_seed[..28] ‖ u32_le(v)``
  draws 5 parents from the "metagraph" of ``5·nodes`` nodes: a bucket
  ``b = u64 mod ⌈log2(5v)⌉ + 1``, then a distance in ``[max(2, 2^b/2), min(5v, 2^b)]``
  below 5v, mapped back by ``// 5`` (a self-reference becomes v − 1). The
  immediate predecessor v − 1 is parent 0 from API 1.1 on (parent 5 in 1.0).
  Nodes 0 and 1 have all parents 0.
- Expander parents (``storage-proofs-porep`` ``vanilla/graph.rs``): parent i
  of v is ``feistel_permute(8·nodes, 8v + i) // 8``, a 3-round Feistel
  network over an even number of bits with a BLAKE2b round function,
  cycle-walked into range.
- Seeds: ``drg_seed = SHA256("Filecoin_DRSample" ‖ porep_id)[..28]``, Feistel
  keys = the four u64 LE words of ``SHA256("Filecoin_Feistel" ‖ porep_id)``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from cuzk.circuits.porep.chacha import chacha8_u64s
from cuzk.circuits.porep.params import BASE_DEGREE, EXP_DEGREE, ApiVersion

DRSAMPLE_DST = b"Filecoin_DRSample"
FEISTEL_DST = b"Filecoin_Feistel"
FEISTEL_ROUNDS = 3


def porep_domain_seed(tag: bytes, porep_id: bytes) -> bytes:
    return hashlib.sha256(tag + porep_id).digest()


def drg_seed(porep_id: bytes) -> bytes:
    return porep_domain_seed(DRSAMPLE_DST, porep_id)[:28]


def feistel_keys(porep_id: bytes) -> tuple[int, int, int, int]:
    raw = porep_domain_seed(FEISTEL_DST, porep_id)
    return tuple(int.from_bytes(raw[8 * i : 8 * i + 8], "little") for i in range(4))


# --------------------------------------------------------------------------
# Feistel permutation (storage-proofs-core crypto/feistel.rs)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Feistel:
    """A permutation of ``[0, num_elements)`` keyed by four u64s (three used)."""

    num_elements: int
    keys: tuple[int, ...]
    half_bits: int = field(init=False)

    def __post_init__(self) -> None:
        # the smallest even bit width 2·h with 4^h ≥ num_elements (h ≥ 1)
        h, size = 1, 4
        while size < self.num_elements:
            size *= 4
            h += 1
        object.__setattr__(self, "half_bits", h)

    def _round(self, right: int, key: int) -> int:
        digest = hashlib.blake2b(right.to_bytes(8, "big") + key.to_bytes(8, "big")).digest()
        return int.from_bytes(digest[:8], "big") & ((1 << self.half_bits) - 1)

    def _encode(self, index: int) -> int:
        h = self.half_bits
        mask = (1 << h) - 1
        left, right = (index >> h) & mask, index & mask
        for key in self.keys[:FEISTEL_ROUNDS]:
            left, right = right, left ^ self._round(right, key)
        return (left << h) | right

    def _decode(self, index: int) -> int:
        h = self.half_bits
        mask = (1 << h) - 1
        left, right = (index >> h) & mask, index & mask
        for key in reversed(self.keys[:FEISTEL_ROUNDS]):
            left, right = right ^ self._round(left, key), left
        return (left << h) | right

    def permute(self, index: int) -> int:
        u = self._encode(index)
        while u >= self.num_elements:  # cycle-walk back into range
            u = self._encode(u)
        return u

    def invert(self, index: int) -> int:
        u = self._decode(index)
        while u >= self.num_elements:
            u = self._decode(u)
        return u


# --------------------------------------------------------------------------
# The stacked graph
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class StackedGraph:
    nodes: int
    porep_id: bytes
    api_version: ApiVersion = ApiVersion.V1_1_0
    seed: bytes = field(init=False)
    feistel: Feistel = field(init=False)

    def __post_init__(self) -> None:
        if self.nodes < 2 or self.nodes * (BASE_DEGREE - 1) > 1 << 54:
            raise ValueError(f"unsupported graph size {self.nodes}")
        object.__setattr__(self, "seed", drg_seed(self.porep_id))
        object.__setattr__(
            self, "feistel", Feistel(self.nodes * EXP_DEGREE, feistel_keys(self.porep_id))
        )

    def drg_parents_many(self, nodes: np.ndarray) -> np.ndarray:
        """DRG parents of many nodes at once: ``(len(nodes), 6)`` uint32."""
        v = np.asarray(nodes, dtype=np.uint64)
        n = len(v)
        out = np.zeros((n, BASE_DEGREE), dtype=np.uint32)
        live = v >= 2
        if not live.any():
            return out
        w = v[live]
        seeds = np.zeros((len(w), 32), dtype=np.uint8)
        seeds[:, :28] = np.frombuffer(self.seed, dtype=np.uint8)
        seeds[:, 28:] = w.astype("<u4").view(np.uint8).reshape(-1, 4)
        m_prime = BASE_DEGREE - 1
        draws = chacha8_u64s(seeds, 2 * m_prime)
        meta = w * np.uint64(m_prime)
        # ⌈log2(x)⌉ = bit_length(x − 1), exact where the f64 log2 of drgraph.rs is
        n_buckets = np.array([int(x - 1).bit_length() for x in meta], dtype=np.uint64)
        random = np.empty((len(w), m_prime), dtype=np.uint64)
        one = np.uint64(1)
        for j in range(m_prime):
            bucket = draws[:, 2 * j] % n_buckets + one
            largest = np.minimum(meta, np.left_shift(one, bucket))
            smallest = np.maximum(np.uint64(2), largest >> one)
            distance = smallest + draws[:, 2 * j + 1] % (largest - smallest + one)
            mapped = (meta - distance) // np.uint64(m_prime)
            random[:, j] = np.where(mapped == w, w - one, mapped)
        if self.api_version == ApiVersion.V1_0_0:
            block = np.concatenate([random, (w - one)[:, None]], axis=1)
        else:
            block = np.concatenate([(w - one)[:, None], random], axis=1)
        out[live] = block.astype(np.uint32)
        return out

    def drg_parents(self, node: int) -> list[int]:
        return [int(x) for x in self.drg_parents_many(np.array([node]))[0]]

    def exp_parents(self, node: int) -> list[int]:
        base = node * EXP_DEGREE
        return [self.feistel.permute(base + i) // EXP_DEGREE for i in range(EXP_DEGREE)]

    def parents(self, node: int) -> list[int]:
        """All 14 parents: 6 DRG then 8 expander."""
        return self.drg_parents(node) + self.exp_parents(node)

    def parents_many(self, nodes: np.ndarray) -> np.ndarray:
        """``(len(nodes), 14)`` uint32, DRG parents then expander parents."""
        nodes = np.asarray(nodes, dtype=np.int64)
        drg = self.drg_parents_many(nodes)
        exp = np.array([self.exp_parents(int(v)) for v in nodes], dtype=np.uint32).reshape(
            len(nodes), EXP_DEGREE
        )
        return np.concatenate([drg, exp], axis=1)

    def parent_cache_digest(self) -> str:
        """SHA-256 (hex) of rust-fil-proofs' parent cache file for this graph:
        every node's 14 parents as u32 LE, node after node."""
        h = hashlib.sha256()
        step = 1 << 14
        for start in range(0, self.nodes, step):
            nodes = np.arange(start, min(start + step, self.nodes))
            h.update(self.parents_many(nodes).astype("<u4").tobytes())
        return h.hexdigest()

    def parent_cache_id(self) -> str:
        """The id rust-fil-proofs names this graph's cache file by (``v28-sdr-parent-…``)."""
        identifier = (
            f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: {BASE_DEGREE}; "
            f"hasher: poseidon_hasher}} }}"
        )
        h = hashlib.sha256(b"poseidon_hasher" + identifier.encode())
        for key in self.feistel.keys:
            h.update(key.to_bytes(8, "little"))
        h.update(self.nodes.to_bytes(4, "little"))
        return f"v28-sdr-parent-{h.hexdigest()}"
