"""Development parameter generation (a single-party Groth16 setup).

Whoever knows the toxic waste (τ, α, β, γ, δ) can forge proofs, so these keys
are for development and testing only; production keys come from Filecoin's
ceremony. By default the waste is drawn from the operating system's secure
RNG and forgotten. A seed makes the setup reproducible for tests, and is
announced as insecure in the log.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_to_array, g1_from_array, g1_to_array, g2_from_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends import native
from cuzk.errors import SynthesisError
from cuzk.groth16.keys import ProvingKey, VerifyingKey
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToxicWaste:
    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    @staticmethod
    def draw(seed: int | None = None) -> ToxicWaste:
        if seed is None:
            draw = lambda: secrets.randbelow(R - 1) + 1  # noqa: E731
        else:
            log.warning("seeded Groth16 setup (seed %d): INSECURE, for tests only", seed)
            rng = random.Random(seed)
            draw = lambda: rng.randrange(1, R)  # noqa: E731
        return ToxicWaste(draw(), draw(), draw(), draw(), draw())


GeneratorMultiples = pairing.FixedBase | native.FixedBaseTable


def _fixed_base(group: str, expected: int) -> GeneratorMultiples:
    """Multiples of a group's generator: the native table when the CPU kernels
    are built (and not switched off), else py-arkworks points in a window table."""
    if native.enabled():
        if group == "G1":
            return native.FixedBaseTable("G1", g1_to_array([G1.generator])[0], expected)
        return native.FixedBaseTable("G2", g2_to_array([G2.generator])[0], expected)
    if group == "G1":
        return pairing.FixedBase(pairing.g1_to_ark(G1.generator))
    return pairing.FixedBase(pairing.g2_to_ark(G2.generator))


def _g1_rows(fb: GeneratorMultiples, scalars: list[int]) -> np.ndarray:
    if isinstance(fb, native.FixedBaseTable):
        return fb.mul_many(fr_to_array(scalars) if scalars else np.zeros((0, 4), np.uint64))
    raw = fb.mul_many_xy_le(scalars)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 6).copy()


def _g2_rows(fb: GeneratorMultiples, scalars: list[int]) -> np.ndarray:
    if isinstance(fb, native.FixedBaseTable):
        return fb.mul_many(fr_to_array(scalars) if scalars else np.zeros((0, 4), np.uint64))
    raw = fb.mul_many_xy_le(scalars)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 2, 6).copy()


@dataclass(frozen=True)
class QueryScalars:
    """The scalars whose multiples of G1 / G2 make up a proving key.

    Each query point is (its scalar)·G for the group's generator G; the
    point-generation step (arkworks here, the GPU in setup_gpu) only
    multiplies.
    """

    waste: ToxicWaste
    ic: list[int]  # (β·A_j + α·B_j + C_j)(τ)/γ for each input j
    l: list[int]  # the same over δ for each aux variable
    h: list[int]  # τ^i·Z(τ)/δ for i < m − 1
    a: list[int]  # A_j(τ) for the A-dense variables
    b: list[int]  # B_j(τ) for the B-dense variables


def query_scalars(r1cs: R1CS, waste: ToxicWaste) -> QueryScalars:
    """Every query's scalars for an R1CS and a draw of toxic waste."""
    w = waste
    domain = EvaluationDomain.for_size(r1cs.num_constraints)
    if domain.z_at(w.tau) == 0:
        raise SynthesisError("τ fell in the evaluation domain; draw again")

    # Each variable's polynomials at τ: A_j(τ) = Σ_rows A[row, j]·L_row(τ).
    lagrange = domain.lagrange_at(w.tau)[: r1cs.num_constraints]
    at = r1cs.a.rmatvec(lagrange)
    bt = r1cs.b.rmatvec(lagrange)
    ct = r1cs.c.rmatvec(lagrange)

    gamma_inv = pow(w.gamma, -1, R)
    delta_inv = pow(w.delta, -1, R)
    ni = r1cs.num_inputs

    def combined(j: int) -> int:
        return (w.beta * at[j] + w.alpha * bt[j] + ct[j]) % R

    ic_scalars = [combined(j) * gamma_inv % R for j in range(ni)]
    l_scalars = [combined(j) * delta_inv % R for j in range(ni, r1cs.num_variables)]
    for j, s in enumerate(l_scalars):
        if s == 0:
            raise SynthesisError(f"aux variable {j} is unconstrained: its L-query point is zero")

    zt_over_delta = domain.z_at(w.tau) * delta_inv % R
    h_scalars = []
    p = zt_over_delta
    for _ in range(domain.size - 1):
        h_scalars.append(p)
        p = p * w.tau % R

    a_mask = np.concatenate([np.ones(ni, dtype=bool), r1cs.a_aux_density()])
    b_mask = r1cs.b.column_mask()
    return QueryScalars(
        waste=w,
        ic=ic_scalars,
        l=l_scalars,
        h=h_scalars,
        a=[at[j] for j in np.flatnonzero(a_mask)],
        b=[bt[j] for j in np.flatnonzero(b_mask)],
    )


def setup(r1cs: R1CS, seed: int | None = None, waste: ToxicWaste | None = None) -> ProvingKey:
    """Generate a proving key (which contains its verifying key) for an R1CS."""
    q = query_scalars(r1cs, waste or ToxicWaste.draw(seed))
    w = q.waste
    g1 = _fixed_base("G1", 3 + len(q.ic) + len(q.l) + len(q.h) + len(q.a) + len(q.b))
    g2 = _fixed_base("G2", 3 + len(q.b))
    ic = g1_from_array(_g1_rows(g1, q.ic))
    alpha_g1, beta_g1, delta_g1 = g1_from_array(_g1_rows(g1, [w.alpha, w.beta, w.delta]))
    beta_g2, gamma_g2, delta_g2 = g2_from_array(_g2_rows(g2, [w.beta, w.gamma, w.delta]))
    vk = VerifyingKey(
        alpha_g1=alpha_g1,
        beta_g1=beta_g1,
        beta_g2=beta_g2,
        gamma_g2=gamma_g2,
        delta_g1=delta_g1,
        delta_g2=delta_g2,
        ic=tuple(ic),
    )
    empty_g1 = g1_to_array([])
    return ProvingKey(
        vk=vk,
        h=_g1_rows(g1, q.h) if q.h else empty_g1,
        l=_g1_rows(g1, q.l) if q.l else empty_g1,
        a=_g1_rows(g1, q.a),
        b_g1=_g1_rows(g1, q.b) if q.b else empty_g1,
        b_g2=_g2_rows(g2, q.b) if q.b else np.zeros((0, 2, 2, 6), np.uint64),
    )
