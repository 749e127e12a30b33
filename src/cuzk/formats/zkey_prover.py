"""Groth16 proofs from a snarkjs .zkey and .wtns, with the key as snarkjs defines it.

For a witness w (ONE first) and a :class:`~cuzk.formats.snarkjs.Zkey` whose
rows and H points are already in cuzk's domain order:

1. a, b = A·w, B·w over the key's QAP coefficients (domain_size rows);
2. p = A·B − C on the odd coset ζ·⟨ω⟩, C through c = a∘b
   (``backend.h_odd_coset``; no division by Z, the H points absorb it);
3. ΣA = Σ wᵢ·Aᵢ, ΣB₁, ΣB₂ over the signals whose points are finite,
   L = Σ w_aux·Cᵢ, H = Σ pᵢ·Hᵢ;
4. with random r, s: A = α + rδ + ΣA, B = β + sδ + ΣB₂,
   C = sA + r(β₁ + sδ₁ + ΣB₁) − rsδ₁ + H + L
   (the same point as bellperson's C = sΣA + rΣB₁ + rsδ + sα + rβ + H + L).

The proof is verified against the key's own verifying key before it is
returned, so a witness that does not satisfy the circuit (or a corrupted key)
is reported, never returned as a proof.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends.base import Backend
from cuzk.errors import InputError, VerificationError
from cuzk.formats.snarkjs import Zkey
from cuzk.groth16 import verifier
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import StageTimes

log = logging.getLogger(__name__)


@dataclass
class PreparedZkey:
    """A zkey's bases loaded into one backend, with its QAP matrices built."""

    zkey: Zkey
    backend: Backend
    qap_a: SparseMatrix
    qap_b: SparseMatrix
    a: Any
    b_g1: Any
    b_g2: Any
    c: Any
    h: Any
    a_select: np.ndarray  # signals with a finite A point
    b_select: np.ndarray  # signals with a finite B point


def _finite(points: np.ndarray) -> np.ndarray:
    return np.flatnonzero(points.reshape(len(points), -1).any(axis=1))


def prepare_zkey(zkey: Zkey, backend: Backend) -> PreparedZkey:
    """Build the QAP matrices and load the bases (points at infinity dropped)."""
    qap_a, qap_b = zkey.matrices
    a_select = _finite(zkey.a)
    b1 = _finite(zkey.b_g1)
    b_select = np.union1d(b1, _finite(zkey.b_g2))
    return PreparedZkey(
        zkey=zkey,
        backend=backend,
        qap_a=qap_a,
        qap_b=qap_b,
        a=backend.prepare_g1(zkey.a[a_select]),
        b_g1=backend.prepare_g1(zkey.b_g1[b_select]),
        b_g2=backend.prepare_g2(zkey.b_g2[b_select]),
        c=backend.prepare_g1(zkey.c),
        h=backend.prepare_g1(zkey.h),
        a_select=a_select,
        b_select=b_select,
    )


def _h_odd_coset(be: Backend, a, b):
    """The backend's h_odd_coset, or the CPU reference's for a backend without it yet."""
    if hasattr(be, "h_odd_coset"):
        return be.h_odd_coset(a, b)
    from cuzk.backends.cpu import CpuBackend

    log.warning("backend %s has no h_odd_coset: computing snarkjs's H on the CPU", be.name)
    return be.asarray(CpuBackend().h_odd_coset(be.to_host(a), be.to_host(b)))


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
    """A verified Groth16 proof for a full witness ((n_vars, 4) uint64)."""
    zk, be = key.zkey, key.backend
    times = times if times is not None else StageTimes()
    if witness.shape != (zk.n_vars, 4):
        raise InputError(
            source,
            "witness count",
            f"{len(witness)} values, but {zk.path} has {zk.n_vars} signals: "
            "the witness belongs to another circuit",
        )
    r = secrets.randbelow(R) if r is None else r % R
    s = secrets.randbelow(R) if s is None else s % R

    t = time.perf_counter()
    w = be.asarray(witness)
    a = be.spmv(key.qap_a, w)
    b = be.spmv(key.qap_b, w)
    t = times.mark("spmv", t)
    p = _h_odd_coset(be, a, b)
    del a, b
    t = times.mark("h_odd_coset", t)

    g_h = be.msm_g1(key.h, p)
    g_l = be.msm_g1(key.c, witness[zk.n_public + 1 :])
    g_a = be.msm_g1(key.a, witness[key.a_select])
    g_b1 = be.msm_g1(key.b_g1, witness[key.b_select])
    t = times.mark("msm_g1", t)
    g_b2 = be.msm_g2(key.b_g2, witness[key.b_select])
    t = times.mark("msm_g2", t)

    vk = zk.vk
    to1, to2 = pairing.g1_to_ark, pairing.g2_to_ark
    rs, ss = pairing.scalar(r), pairing.scalar(s)
    delta1 = to1(vk.delta_g1)
    proof_a = to1(vk.alpha_g1) + delta1 * rs + to1(g_a)
    proof_b = to2(vk.beta_g2) + to2(vk.delta_g2) * ss + to2(g_b2)
    b1 = to1(vk.beta_g1) + delta1 * ss + to1(g_b1)
    proof_c = proof_a * ss + b1 * rs - delta1 * pairing.scalar(r * s % R) + to1(g_h) + to1(g_l)
    proof = Proof(
        a=pairing.g1_from_ark(proof_a),
        b=pairing.g2_from_ark(proof_b),
        c=pairing.g1_from_ark(proof_c),
    )
    t = times.mark("assemble", t)
    ok = verifier.verify(vk, public_signals(zk, witness), proof)
    times.mark("verify", t)
    if not ok:
        raise VerificationError(
            f"the proof for {source} did not verify against {zk.path}: the witness does not "
            "satisfy this key's circuit, or the key is corrupted"
        )
    return proof
