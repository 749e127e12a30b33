"""A Groth16 proof and its 192-byte encoding (bellperson / Filecoin).

``A ‖ B ‖ C`` compressed: 48 + 96 + 48 bytes. A multi-partition proof is the
partitions' encodings concatenated.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.algebra.curves import Affine
from cuzk.algebra.encoding import decode_g1, decode_g2, encode_g1, encode_g2
from cuzk.errors import EncodingError, InputError

PROOF_BYTES = 192


@dataclass(frozen=True)
class Proof:
    a: Affine  # G1
    b: Affine  # G2
    c: Affine  # G1

    def to_bytes(self) -> bytes:
        return encode_g1(self.a) + encode_g2(self.b) + encode_g1(self.c)

    @staticmethod
    def from_bytes(data: bytes, source: str = "proof") -> Proof:
        if len(data) != PROOF_BYTES:
            raise InputError(source, "length", f"{len(data)} bytes, a proof is {PROOF_BYTES}")
        parts = (("A", decode_g1, 0, 48), ("B", decode_g2, 48, 144), ("C", decode_g1, 144, 192))
        points = []
        for name, decode, lo, hi in parts:
            try:
                points.append(decode(data[lo:hi]))
            except EncodingError as e:
                raise InputError(source, name, str(e)) from e
        return Proof(*points)


def encode_proofs(proofs: list[Proof]) -> bytes:
    return b"".join(p.to_bytes() for p in proofs)


def decode_proofs(data: bytes, source: str = "proof") -> list[Proof]:
    """Split concatenated partition proofs."""
    if len(data) == 0 or len(data) % PROOF_BYTES:
        raise InputError(
            source,
            "length",
            f"{len(data)} bytes is not a whole number of {PROOF_BYTES}-byte proofs",
        )
    return [
        Proof.from_bytes(data[i : i + PROOF_BYTES], f"{source}[partition {i // PROOF_BYTES}]")
        for i in range(0, len(data), PROOF_BYTES)
    ]
