"""Development parameter generation (a single-party Groth16 setup).

Whoever knows the toxic waste (τ, α, β, γ, δ) can forge proofs, so these keys
are for development and testing only; production keys come from Filecoin's
ceremony. By default the waste is drawn from the operating system's secure
RNG and forgotten. A seed makes the setup reproducible for tests, and is
announced as insecure in the log.
"""

from __future__ import annotations

import copy
import logging
import random
import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import (
    fr_from_array,
    fr_to_array,
    g1_from_array,
    g1_to_array,
    g2_to_array,
    to_zcash,
)
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends import native
from cuzk.errors import SynthesisError
from cuzk.groth16.keys import ProvingKey, VerifyingKey, query_group
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


def _g1_rows(fb: GeneratorMultiples, scalars: np.ndarray) -> np.ndarray:
    if not len(scalars):
        return g1_to_array([])
    if isinstance(fb, native.FixedBaseTable):
        return fb.mul_many(scalars)
    raw = fb.mul_many_xy_le(fr_from_array(scalars))
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 6).copy()


def _g2_rows(fb: GeneratorMultiples, scalars: np.ndarray) -> np.ndarray:
    if not len(scalars):
        return np.zeros((0, 2, 2, 6), np.uint64)
    if isinstance(fb, native.FixedBaseTable):
        return fb.mul_many(scalars)
    raw = fb.mul_many_xy_le(fr_from_array(scalars))
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 2, 6).copy()


@dataclass(frozen=True, eq=False)
class QueryScalars:
    """The scalars whose multiples of G1 / G2 make up a proving key.

    Each query point is (its scalar)·G for the group's generator G; the
    point-generation step (the native fixed-base kernels or arkworks here,
    the GPU in setup_gpu) only multiplies. Every field is an (n, 4) uint64
    array of Fr elements in standard form, the fixed-base kernels' input.
    """

    waste: ToxicWaste
    ic: np.ndarray  # (β·A_j + α·B_j + C_j)(τ)/γ for each input j
    l: np.ndarray  # the same over δ for each aux variable
    h: np.ndarray  # τ^i·Z(τ)/δ for i < m − 1
    a: np.ndarray  # A_j(τ) for the A-dense variables
    b: np.ndarray  # B_j(τ) for the B-dense variables


def _domain_outside(r1cs: R1CS, tau: int) -> EvaluationDomain:
    domain = EvaluationDomain.for_size(r1cs.num_constraints)
    if domain.z_at(tau) == 0:
        raise SynthesisError("τ fell in the evaluation domain; draw again")
    return domain


def _densities(r1cs: R1CS) -> tuple[np.ndarray, np.ndarray]:
    """Which variables get an A-query and a B-query point (every input has an A one)."""
    a_mask = np.concatenate([np.ones(r1cs.num_inputs, dtype=bool), r1cs.a_aux_density()])
    return a_mask, r1cs.b.column_mask()


def _unconstrained(j: int) -> SynthesisError:
    return SynthesisError(f"aux variable {j} is unconstrained: its L-query point is zero")


def query_scalars(r1cs: R1CS, waste: ToxicWaste) -> QueryScalars:
    """Every query's scalars for an R1CS and a draw of toxic waste.

    With the native kernels (the default), the whole computation stays in
    (n, 4) arrays: L(τ) by one batch inversion per thread, Aᵀ·L, Bᵀ·L, Cᵀ·L
    by threaded transposed sparse products, h as a geometric sequence: five
    256-bit multiplications per constraint for L(τ), one per matrix entry
    other than ±1, three per variable for IC and L, one per domain point for
    h; at most four arrays of 32 bytes per variable or constraint alive at
    once, where :func:`query_scalars_python` (the reference it is tested
    against, bit for bit) holds several lists of Python ints of that length
    and an object array per matrix entry.
    """
    if not native.enabled():
        return query_scalars_python(r1cs, waste)
    w = waste
    domain = _domain_outside(r1cs, w.tau)
    lagrange = native.lagrange_at(domain, w.tau, r1cs.num_constraints)
    nv = r1cs.num_variables
    a_mask, b_mask = np.ones(nv, dtype=bool), np.empty(nv, dtype=bool)
    at = native.rmatvec(r1cs.a, lagrange, a_mask)
    bt = native.rmatvec(r1cs.b, lagrange, b_mask)
    ct = native.rmatvec(r1cs.c, lagrange)
    del lagrange
    a_mask[: r1cs.num_inputs] = True  # every input has an A-query point

    gamma_inv = pow(w.gamma, -1, R)
    delta_inv = pow(w.delta, -1, R)
    ni = r1cs.num_inputs
    ic, _ = native.qap_combine(at[:ni], bt[:ni], ct[:ni], w.beta, w.alpha, gamma_inv)
    # The L query overwrites C's aux part, which nothing else needs.
    l_scalars, zero = native.qap_combine(
        at[ni:], bt[ni:], ct[ni:], w.beta, w.alpha, delta_inv, out=ct[ni:]
    )
    if zero is not None:
        raise _unconstrained(zero)
    # np.compress copies whole 32-byte rows, several times faster than a[mask].
    a = np.compress(a_mask, at, axis=0)
    del at
    b = np.compress(b_mask, bt, axis=0)
    del bt
    h = native.powers(domain.z_at(w.tau) * delta_inv % R, w.tau, domain.size - 1)
    return QueryScalars(waste=w, ic=ic, l=l_scalars, h=h, a=a, b=b)


def query_scalars_python(r1cs: R1CS, waste: ToxicWaste) -> QueryScalars:
    """The reference :func:`query_scalars` on Python ints (and the path taken
    without the native kernels)."""
    w = waste
    domain = _domain_outside(r1cs, w.tau)

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
            raise _unconstrained(j)

    zt_over_delta = domain.z_at(w.tau) * delta_inv % R
    h_scalars = []
    p = zt_over_delta
    for _ in range(domain.size - 1):
        h_scalars.append(p)
        p = p * w.tau % R

    a_mask, b_mask = _densities(r1cs)
    return QueryScalars(
        waste=w,
        ic=_fr_array(ic_scalars),
        l=_fr_array(l_scalars),
        h=_fr_array(h_scalars),
        a=_fr_array([at[j] for j in np.flatnonzero(a_mask)]),
        b=_fr_array([bt[j] for j in np.flatnonzero(b_mask)]),
    )


def _fr_array(values: list[int]) -> np.ndarray:
    return fr_to_array(values) if values else np.zeros((0, 4), np.uint64)


class PointMaker(Protocol):
    """Multiples of the generators for a setup: ``g1(scalars)`` → (n, 2, 6) and
    ``g2(scalars)`` → (n, 2, 2, 6) affine limbs, arrays of ``xp`` (numpy, or
    CuPy when the points are made on a GPU)."""

    xp: Any

    def g1(self, scalars: np.ndarray) -> Any: ...

    def g2(self, scalars: np.ndarray) -> Any: ...


class CpuPoints:
    """The CPU's fixed-base multiplications (native tables, or arkworks)."""

    xp = np

    def __init__(self, g1_count: int, g2_count: int) -> None:
        self._g1 = _fixed_base("G1", g1_count)
        self._g2 = _fixed_base("G2", g2_count)

    def g1(self, scalars: np.ndarray) -> np.ndarray:
        return _g1_rows(self._g1, scalars)

    def g2(self, scalars: np.ndarray) -> np.ndarray:
        return _g2_rows(self._g2, scalars)


def _host(xp: Any, a: Any) -> np.ndarray:
    return a if xp is np else a.get()


class DevParams:
    """Development parameters of an R1CS (INSECURE) as a key source
    (:class:`cuzk.groth16.keys.KeySource`): the query scalars are computed once,
    the points a chunk at a time as they are read, by ``points`` (the CPU's
    fixed-base tables by default, a GPU's through
    :class:`cuzk.groth16.setup_gpu.GpuPoints`).

    The same stream feeds a device (:func:`cuzk.groth16.prover.load`), a
    ``.params`` file (:func:`cuzk.formats.bellperson.write_params_from`) or an
    in-memory key (:meth:`proving_key`), so a development key reaches the
    prover exactly as a file's key does. Host memory: the query scalars, 32
    bytes a point, never the points (96 / 192 bytes each) beyond one chunk.
    """

    def __init__(
        self,
        r1cs: R1CS,
        seed: int | None = None,
        waste: ToxicWaste | None = None,
        points: PointMaker | None = None,
        name: str = "development key",
    ) -> None:
        self.name = name
        self.waste = waste or ToxicWaste.draw(seed)
        t = time.perf_counter()
        q = query_scalars(r1cs, self.waste)
        log.info("setup: query scalars in %.1f s", time.perf_counter() - t)
        self._scalars = {"h": q.h, "l": q.l, "a": q.a, "b_g1": q.b, "b_g2": q.b}
        if points is None:
            points = CpuPoints(
                3 + len(q.ic) + len(q.l) + len(q.h) + len(q.a) + len(q.b), 3 + len(q.b)
            )
        self.points = points
        w = self.waste
        self.vk = VerifyingKey(
            alpha_g1=pairing.g1_mul(G1.generator, w.alpha),
            beta_g1=pairing.g1_mul(G1.generator, w.beta),
            beta_g2=pairing.g2_mul(G2.generator, w.beta),
            gamma_g2=pairing.g2_mul(G2.generator, w.gamma),
            delta_g1=pairing.g1_mul(G1.generator, w.delta),
            delta_g2=pairing.g2_mul(G2.generator, w.delta),
            ic=tuple(g1_from_array(self._points("G1", q.ic, host=True))),
        )

    def _points(self, group: str, scalars: np.ndarray, host: bool = False) -> Any:
        xp = self.points.xp
        if not len(scalars):
            shape = (0, 2, 6) if group == "G1" else (0, 2, 2, 6)
            return np.zeros(shape, np.uint64)
        made = self.points.g1(scalars) if group == "G1" else self.points.g2(scalars)
        return _host(xp, made) if host else made

    def with_points(self, points: PointMaker) -> DevParams:
        """The same key with its points made by ``points`` (another GPU's kernels):
        the scalars and the verifying key are shared, not computed again."""
        other = copy.copy(self)
        other.points = points
        return other

    def count(self, query: str) -> int:
        return len(self._scalars[query])

    def reader(self, query: str):
        scalars = self._scalars[query]
        group = query_group(query)
        xp = self.points.xp

        def read(lo: int, hi: int, out: np.ndarray) -> None:
            pts = self._points(group, scalars[lo:hi])
            enc = to_zcash(pts, group, xp=xp) if len(pts) else np.zeros(out.shape, np.uint8)
            out[...] = _host(xp, enc)

        return read

    def where(self, query: str, index: int) -> str:
        return f"point {index} of the generated {query} query"

    def proving_key(self) -> ProvingKey:
        """Every point, in memory (small circuits: tests, benchmarks)."""
        return ProvingKey(
            vk=self.vk,
            **{q: self._points(query_group(q), s, host=True) for q, s in self._scalars.items()},
        )


def setup(r1cs: R1CS, seed: int | None = None, waste: ToxicWaste | None = None) -> ProvingKey:
    """Generate a proving key (which contains its verifying key) for an R1CS."""
    return DevParams(r1cs, seed, waste).proving_key()
