"""A development Groth16 setup written as a snarkjs .zkey (single party, INSECURE).

snarkjs makes a .zkey from a powers-of-tau ceremony file, whose preparation
takes snarkjs hours at 2^16 and more; this writes the same key directly from
toxic waste (τ, α, β, γ, δ), for tests and benchmarks where the key's origin
does not matter. Whoever knows the waste can forge proofs: never use such a
key for anything real.

The key is exactly what snarkjs's prover expects (``cuzk.formats.snarkjs``
documents the layout): for constraint rows c over snarkjs's domain points
ω_s^c with Lagrange basis L_c(τ), and every signal j,

- A_j = Σ_c A[c, j]·L_c(τ) (input constraints included), B_j likewise; the
  A, B₁, B₂ sections hold A_j·G₁, B_j·G₁, B_j·G₂ (infinity where zero);
- IC_j = (β·A_j + α·B_j + C_j)/γ for public j, the C section the same over δ
  for private j;
- H_i = L'_{2i+1}(τ)/δ, L' the Lagrange basis of the 2m-domain over snarkjs's
  ζ_s (ζ_s² = ω_s);
- the coefficient section lists A's and B's entries (n·2^512 mod r);
- the contributions section records no contribution (and a zero hash, so
  ``snarkjs zkey verify`` rejects the key, as it should for a key with no
  ceremony behind it).
"""

from __future__ import annotations

import logging
import os
import struct

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import Q, R
from cuzk.errors import SynthesisError
from cuzk.formats.binfile import write_binfile
from cuzk.formats.points import fr_to_mont2, g1_to_lem, g2_to_lem
from cuzk.formats.snarkjs import (
    GROTH16_PROTOCOL_ID,
    SNARKJS_ROOT_EXPONENT,
    CircomR1CS,
    snarkjs_row_positions,
)
from cuzk.groth16.setup import ToxicWaste

log = logging.getLogger(__name__)


def _g1_rows(fb: pairing.FixedBase, scalars) -> np.ndarray:
    return np.frombuffer(fb.mul_many_xy_le(scalars), dtype="<u8").reshape(-1, 2, 6)


def _g2_rows(fb: pairing.FixedBase, scalars) -> np.ndarray:
    return np.frombuffer(fb.mul_many_xy_le(scalars), dtype="<u8").reshape(-1, 2, 2, 6)


def write_zkey(
    path: str | os.PathLike,
    circuit: CircomR1CS,
    seed: int | None = None,
    waste: ToxicWaste | None = None,
) -> None:
    """Write a Groth16 .zkey for a circom circuit from fresh (or given) toxic waste."""
    w = waste or ToxicWaste.draw(seed)
    r1 = circuit.r1cs
    n_vars, n_public = circuit.n_vars, circuit.n_public
    d = EvaluationDomain.for_size(r1.num_constraints)
    m = d.size
    d2 = EvaluationDomain(d.log_size + 1)
    if d2.z_at(w.tau) == 0:
        raise SynthesisError("τ fell in the evaluation domain; draw again")
    log.warning("writing a development zkey (single-party setup): INSECURE")

    # L_c(τ) at snarkjs's point ω_s^c = ω^pos[c].
    lag = d.lagrange_at(w.tau)
    pos = snarkjs_row_positions(m)
    lag_s = [lag[int(pos[c])] for c in range(r1.num_constraints)]
    at, bt, ct = (mat.rmatvec(lag_s) for mat in (r1.a, r1.b, r1.c))
    gamma_inv, delta_inv = pow(w.gamma, -1, R), pow(w.delta, -1, R)
    combined = [(w.beta * at[j] + w.alpha * bt[j] + ct[j]) % R for j in range(n_vars)]
    ic = [combined[j] * gamma_inv % R for j in range(n_public + 1)]
    priv = [combined[j] * delta_inv % R for j in range(n_public + 1, n_vars)]
    # H_i at snarkjs's odd point ζ_s^(2i+1) = ζ^(E(2i+1) mod 2m).
    lag2 = d2.lagrange_at(w.tau)
    e = SNARKJS_ROOT_EXPONENT % (2 * m)
    h = [lag2[e * (2 * i + 1) % (2 * m)] * delta_inv % R for i in range(m)]

    g1 = pairing.FixedBase(pairing.g1_to_ark(G1.generator))
    g2 = pairing.FixedBase(pairing.g2_to_ark(G2.generator))
    header = b"".join(
        [
            struct.pack("<I", 48),
            Q.to_bytes(48, "little"),
            struct.pack("<I", 32),
            R.to_bytes(32, "little"),
            struct.pack("<III", n_vars, n_public, m),
            g1_to_lem(_g1_rows(g1, [w.alpha, w.beta])),
            g2_to_lem(_g2_rows(g2, [w.beta, w.gamma])),
            g1_to_lem(_g1_rows(g1, [w.delta])),
            g2_to_lem(_g2_rows(g2, [w.delta])),
        ]
    )
    coeffs = [struct.pack("<I", r1.a.nnz + r1.b.nnz)]
    for which, mat in ((0, r1.a), (1, r1.b)):
        idx = np.stack(
            [np.full(mat.nnz, which, np.int64), mat.row_ids(), mat.indices], axis=1
        ).astype("<u4")
        vals = np.frombuffer(fr_to_mont2(mat.coeff_ints()), np.uint8).reshape(mat.nnz, 32)
        coeffs.append(np.concatenate([idx.view(np.uint8).reshape(mat.nnz, 12), vals], 1).tobytes())
    sections = [
        (1, struct.pack("<I", GROTH16_PROTOCOL_ID)),
        (2, header),
        (3, g1_to_lem(_g1_rows(g1, ic))),
        (4, b"".join(coeffs)),
        (5, g1_to_lem(_g1_rows(g1, at))),
        (6, g1_to_lem(_g1_rows(g1, bt))),
        (7, g2_to_lem(_g2_rows(g2, bt))),
        (8, g1_to_lem(_g1_rows(g1, priv)) if priv else b""),
        (9, g1_to_lem(_g1_rows(g1, h))),
        (10, bytes(64) + struct.pack("<I", 0)),
    ]
    write_binfile(path, b"zkey", 1, sections)
