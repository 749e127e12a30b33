"""Values a PoRep derives from public data: prover id, replica id, challenges.

- ``prover_id``: the miner's actor id as unsigned LEB128, left-aligned in 32
  bytes (how Filecoin addresses' payloads reach the proofs library).
- ``replica_id = sha254(prover_id ‖ u64_be(sector_id) ‖ ticket ‖ comm_d ‖ porep_id)``
  (``generate_replica_id`` in storage-proofs-porep ``vanilla/params.rs``).
- Interactive challenges of partition k: for j = k·n + i (i < n challenges
  per partition), ``SHA256(replica_id ‖ seed ‖ u32_le(j))`` read as a
  little-endian integer, ``mod (nodes − 1) + 1`` (node 0 is never challenged;
  ``vanilla/challenges.rs``).
- Synthetic challenges (``…_Feat_SyntheticPoRep``): the sealer fixes, before
  the seed exists, a set of S = min(nodes, 2^18) *synthetic* challenges: the
  i-th is bytes [32i, 32i + 32) of the ChaCha20 keystream keyed by
  ``BLAKE2b-256(key = "filecoin.io|PoRep|1|Synthetic|1|Generation", replica_id
  ‖ comm_r)`` (nonce ``"synth-porep\0"``), as a little-endian integer,
  ``mod (nodes − 1) + 1``. Once the seed is known, challenge j = k·n + i of
  partition k is the synthetic challenge whose index is the u32 at bytes
  [4j, 4j + 4) of the keystream keyed by ``BLAKE2b-256(key =
  "filecoin.io|PoRep|1|Synthetic|1|Selection", replica_id ‖ seed)`` (same
  nonce), ``mod S``. The C1 output carries the vanilla proofs of those
  selected challenges, in that order, as an interactive one does its own.
- Non-interactive PoRep (``…_Feat_NonInteractivePoRep``) is not derived here:
  Curio does not send it.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cuzk.circuits.porep.chacha import chacha20_keystream
from cuzk.circuits.porep.params import RegisteredSealProof
from cuzk.hashers.sha256 import sha254


def prover_id_from_miner(miner_id: int) -> bytes:
    """LEB128 of the actor id, zero padded to 32 bytes."""
    if miner_id < 0:
        raise ValueError("a miner id is not negative")
    out = bytearray()
    while True:
        byte = miner_id & 0x7F
        miner_id >>= 7
        if miner_id:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            break
    if len(out) > 32:
        raise ValueError("miner id too large")
    return bytes(out) + bytes(32 - len(out))


def replica_id(
    prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_id: bytes
) -> bytes:
    return sha254(prover_id + sector_id.to_bytes(8, "big") + ticket + comm_d + porep_id)


def interactive_challenges(
    replica_id: bytes, seed: bytes, nodes: int, per_partition: int, partition: int
) -> list[int]:
    """The challenged nodes of one partition, in proof order."""
    out = []
    for i in range(per_partition):
        j = per_partition * partition + i
        h = hashlib.sha256(replica_id + seed + j.to_bytes(4, "little")).digest()
        out.append(int.from_bytes(h, "little") % (nodes - 1) + 1)
    return out


SYNTHETIC = "SyntheticPoRep"
SYNTH_CHALLENGES_MAX = 1 << 18
_SYNTH_NONCE = b"synth-porep\x00"
_SYNTH_GENERATION = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
_SYNTH_SELECTION = b"filecoin.io|PoRep|1|Synthetic|1|Selection"


def _synth_key(tag: bytes, replica_id: bytes, other: bytes) -> bytes:
    return hashlib.blake2b(replica_id + other, digest_size=32, key=tag).digest()


def synthetic_set_size(nodes: int) -> int:
    """How many synthetic challenges a sector of ``nodes`` nodes has."""
    return min(nodes, SYNTH_CHALLENGES_MAX)


def synthetic_challenge(replica_id: bytes, comm_r: bytes, nodes: int, indexes) -> list[int]:
    """The synthetic challenges at ``indexes`` (each below :func:`synthetic_set_size`)."""
    key = _synth_key(_SYNTH_GENERATION, replica_id, comm_r)
    out = []
    for i in indexes:
        block = chacha20_keystream(key, _SYNTH_NONCE, 32 * i, 32)
        out.append(int.from_bytes(block, "little") % (nodes - 1) + 1)
    return out


def synthetic_indexes(
    replica_id: bytes, seed: bytes, set_size: int, per_partition: int, partition: int
) -> list[int]:
    """Which synthetic challenges partition ``partition`` proves, in proof order."""
    key = _synth_key(_SYNTH_SELECTION, replica_id, seed)
    first = per_partition * partition
    stream = chacha20_keystream(key, _SYNTH_NONCE, 4 * first, 4 * per_partition)
    return [int(x) % set_size for x in np.frombuffer(stream, dtype="<u4")]


def synthetic_challenges(
    replica_id: bytes,
    comm_r: bytes,
    seed: bytes,
    nodes: int,
    per_partition: int,
    partition: int,
    set_size: int | None = None,
) -> list[int]:
    """The challenged nodes of one partition of a synthetic seal proof, in proof order."""
    size = set_size if set_size is not None else synthetic_set_size(nodes)
    picked = synthetic_indexes(replica_id, seed, size, per_partition, partition)
    return synthetic_challenge(replica_id, comm_r, nodes, picked)


def partition_challenges(
    proof: RegisteredSealProof, replica_id: bytes, seed: bytes, comm_r: bytes | None = None
) -> list[list[int]]:
    """Every partition's challenges: interactive, or synthetic (which needs comm_r)."""
    s = proof.sector
    if proof.interactive:
        return [
            interactive_challenges(replica_id, seed, s.nodes, s.challenges_per_partition, k)
            for k in range(s.partitions)
        ]
    if proof.feature == SYNTHETIC:
        if comm_r is None:
            raise ValueError(f"{proof.name}: synthetic challenges are derived from comm_r too")
        return [
            synthetic_challenges(replica_id, comm_r, seed, s.nodes, s.challenges_per_partition, k)
            for k in range(s.partitions)
        ]
    raise NotImplementedError(f"{proof.name}: non-interactive PoRep challenges are not derived")
