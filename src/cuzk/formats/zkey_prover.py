"""Groth16 proofs from a snarkjs .zkey and .wtns, with the key as snarkjs defines it.

A snarkjs key differs from bellperson's in one step, the reduction
(:data:`SNARKJS`); the proof is :func:`cuzk.groth16.prover.prove`'s body. For
a witness w (ONE first) and a :class:`~cuzk.formats.snarkjs.Zkey` whose rows
and H points are already in cuzk's domain order:

1. a, b = A·w, B·w over the key's QAP coefficients (domain_size rows; a
   snarkjs key has no C matrix);
2. p = A·B − C on the odd coset ζ·⟨ω⟩, C through c = a∘b
   (``Backend.h_odd_coset``; no division by Z, the H points absorb it);
3. ΣA = Σ wᵢ·Aᵢ, ΣB₁, ΣB₂ over the signals whose points are finite,
   L = Σ w_aux·Cᵢ (the key's C points are its L query), H = Σ pᵢ·Hᵢ;
4. with random r, s: A = α + rδ + ΣA, B = β + sδ + ΣB₂, and bellperson's
   C = sΣA + rΣB₁ + rsδ + sα + rβ + H + L, the same point as snarkjs's
   C = sA + r(β₁ + sδ₁ + ΣB₁) − rsδ₁ + H + L.

The proof is verified against the key's own verifying key before it is
returned, so a witness that does not satisfy the circuit (or a corrupted key)
is reported, never returned as a proof.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.backends.base import Backend
from cuzk.errors import InputError, VerificationError
from cuzk.formats.snarkjs import Zkey
from cuzk.groth16 import prover, verifier
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import PreparedKey, Reduction, StageTimes

# snarkjs's H scalars: A·B − C on the odd coset, C through a∘b (no C matrix).
SNARKJS = Reduction("h_odd_coset", lambda be, a, b: be.h_odd_coset(a, b))


@dataclass
class PreparedZkey:
    """A zkey and its key made ready on one backend (QAP matrices A and B,
    bases, the snarkjs reduction): :func:`cuzk.groth16.prover.prove` runs it."""

    zkey: Zkey
    key: PreparedKey

    @property
    def backend(self) -> Backend:
        return self.key.backend

    def close(self) -> None:
        self.key.close()


def _finite(points: np.ndarray) -> np.ndarray:
    return np.flatnonzero(points.reshape(len(points), -1).any(axis=1))


def prepare_zkey(zkey: Zkey, backend: Backend) -> PreparedZkey:
    """Build the QAP matrices and load the bases (points at infinity dropped)."""
    a_select = _finite(zkey.a)
    b_select = np.union1d(_finite(zkey.b_g1), _finite(zkey.b_g2))
    bases = {
        "h": zkey.h,
        "l": zkey.c,
        "a": zkey.a[a_select],
        "b_g1": zkey.b_g1[b_select],
        "b_g2": zkey.b_g2[b_select],
    }
    key = prover.prepare_parts(
        zkey.vk, bases, zkey.matrices, a_select, b_select, zkey.n_public + 1, backend, SNARKJS
    )
    return PreparedZkey(zkey, key)


def public_signals(zkey: Zkey, witness: np.ndarray) -> list[int]:
    """What snarkjs writes to public.json: signals 1..nPublic."""
    return fr_from_array(witness[1 : zkey.n_public + 1])


def prove_zkey(
    key: PreparedZkey,
    witness: np.ndarray,
    r: int | None = None,
    s: int | None = None,
    times: StageTimes | None = None,
    source: str = "witness",
) -> Proof:
    """A verified Groth16 proof for a full witness ((n_vars, 4) uint64):
    :func:`cuzk.groth16.prover.prove`, then the check against the key's own
    verifying key (a ``verify`` stage in ``times``)."""
    zk = key.zkey
    times = times if times is not None else StageTimes()
    if witness.shape != (zk.n_vars, 4):
        raise InputError(
            source,
            "witness count",
            f"{len(witness)} values, but {zk.path} has {zk.n_vars} signals: "
            "the witness belongs to another circuit",
        )
    proof = prover.prove(key.key, None, witness, r, s, times)
    t = time.perf_counter()
    ok = verifier.verify(zk.vk, public_signals(zk, witness), proof)
    times.mark("verify", t)
    if not ok:
        raise VerificationError(
            f"the proof for {source} did not verify against {zk.path}: the witness does not "
            "satisfy this key's circuit, or the key is corrupted"
        )
    return proof
