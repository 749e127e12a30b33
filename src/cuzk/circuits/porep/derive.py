"""Values a PoRep derives from public data: prover id, replica id, challenges.

- ``prover_id``: the miner's actor id as unsigned LEB128, left-aligned in 32
  bytes (how Filecoin addresses' payloads reach the proofs library).
- ``replica_id = sha254(prover_id ‖ u64_be(sector_id) ‖ ticket ‖ comm_d ‖ porep_id)``
  (``generate_replica_id`` in storage-proofs-porep ``vanilla/params.rs``).
- Interactive challenges of partition k: for j = k·n + i (i < n challenges
  per partition), ``SHA256(replica_id ‖ seed ‖ u32_le(j))`` read as a
  little-endian integer, ``mod (nodes − 1) + 1`` (node 0 is never challenged;
  ``vanilla/challenges.rs``).
"""

from __future__ import annotations

import hashlib

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


def partition_challenges(
    proof: RegisteredSealProof, replica_id: bytes, seed: bytes
) -> list[list[int]]:
    """Every partition's challenges for an interactive seal proof."""
    if not proof.interactive:
        raise NotImplementedError(f"{proof.name}: only interactive PoRep challenges are derived")
    s = proof.sector
    return [
        interactive_challenges(replica_id, seed, s.nodes, s.challenges_per_partition, k)
        for k in range(s.partitions)
    ]
