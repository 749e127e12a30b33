"""The H polynomial on the GPU against the CPU backend, on random data and a real circuit."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from cuda_targets import to_numpy

from cuzk.algebra.arrays import fr_from_array, fr_random, fr_to_array
from cuzk.algebra.fields import R
from cuzk.circuits.demo import DemoCircuit
from cuzk.r1cs import ConstraintSystem


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 100, 1000, 4096])
def test_h_poly_matches_cpu(backend, cpu, n):
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    # Unequal lengths: shorter inputs are zero-padded to the domain.
    a, b, c = fr_random(n, rng), fr_random(max(1, n // 2), rng), fr_random(n, rng)
    a[0] = fr_to_array([R - 1])[0]
    got = backend.to_host(backend.h_poly(a, b, c))
    want = cpu.h_poly(a, b, c)
    assert got.shape == want.shape and np.array_equal(got, want), f"n {n}, seed {seed}"


def test_h_poly_edge_values(backend, cpu):
    n = 64
    for a, b, c in (
        ([0] * n, [0] * n, [0] * n),
        ([R - 1] * n, [R - 1] * n, [1] * n),
        ([1, 2, 3] * 21 + [0], [R - 1] * n, [5] * n),
    ):
        arrs = [fr_to_array(v) for v in (a, b, c)]
        assert np.array_equal(backend.to_host(backend.h_poly(*arrs)), cpu.h_poly(*arrs))


def test_real_circuit_spmv_and_h_match_cpu(backend, cpu):
    """A satisfied demo circuit: A·w, B·w, C·w and H, GPU against CPU."""
    circuit = DemoCircuit.with_constraints(1500)
    cs = ConstraintSystem(witness=True)
    circuit.synthesize(
        cs, secrets.randbelow(R), [secrets.randbits(64) for _ in range(circuit.words)]
    )
    r1cs = cs.r1cs()
    w = fr_to_array(cs.assignment())
    gpu = [backend.spmv(m, w) for m in (r1cs.a, r1cs.b, r1cs.c)]
    ref = [cpu.spmv(m, w) for m in (r1cs.a, r1cs.b, r1cs.c)]
    for g, r in zip(gpu, ref, strict=True):
        assert np.array_equal(backend.to_host(g), r)
    h = backend.h_poly(*gpu)  # device arrays straight from spmv
    assert np.array_equal(backend.to_host(h), cpu.h_poly(*ref))
    # The other sparse kernel on the same circuit.
    from cuzk.backends.cuda.spmv import KERNELS, SpmvEngine

    for kernel in KERNELS:
        eng = SpmvEngine(backend.ctx, backend.fr, kernel=kernel)
        for m, r in zip((r1cs.a, r1cs.b, r1cs.c), ref, strict=True):
            assert np.array_equal(to_numpy(eng.matvec(eng.upload(m), w)), r), kernel


@pytest.mark.gpu
def test_large_h_poly_matches_separate_transforms(backend, target):
    """At 2^18: the fused six-NTT path against the backend's own transforms."""
    if target != "gpu":
        pytest.skip("large sizes run on the GPU only")
    from cuzk.algebra.domain import EvaluationDomain

    fr = backend.fr
    n = 1 << 18
    seed = secrets.randbits(32)
    a, b, c = fr.random(n, seed), fr.random(n, seed + 1), fr.random(n, seed + 2)
    d = EvaluationDomain.for_size(n)
    ea = backend.coset_ntt(backend.intt(a))
    eb = backend.coset_ntt(backend.intt(b))
    ec = backend.coset_ntt(backend.intt(c))
    t = fr.scale(fr.sub(fr.mul(ea, eb), ec), d.z_on_coset_inv)
    want = to_numpy(backend.coset_intt(t))
    assert np.array_equal(to_numpy(backend.h_poly(a, b, c)), want[:-1])


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 100, 1000])
def test_h_odd_coset_matches_cpu(backend, cpu, n):
    """snarkjs's H scalars, bit for bit the CPU's: c given, and c = a∘b."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    a, b, c = fr_random(n, rng), fr_random(max(1, n // 2), rng), fr_random(n, rng)
    a[0] = fr_to_array([R - 1])[0]
    for args in ((a, b), (a, b, c)):
        got = backend.to_host(backend.h_odd_coset(*args))
        want = cpu.h_odd_coset(*args)
        assert got.shape == want.shape == (1 << max(0, (n - 1).bit_length()), 4)
        assert np.array_equal(got, want), f"n {n}, {len(args)} inputs, seed {seed}"


def test_h_odd_coset_of_a_satisfied_circuit_is_its_h_times_z(backend, cpu):
    """On a satisfied demo circuit P = A·B − C vanishes on ⟨ω⟩, so on the odd
    coset, where Z = x^m − 1 is −2, P(ζ·ωⁱ) = −2·H(ζ·ωⁱ)."""
    from cuzk.algebra.domain import EvaluationDomain

    circuit = DemoCircuit.with_constraints(300)
    cs = ConstraintSystem(witness=True)
    circuit.synthesize(cs, 5, [secrets.randbits(64) for _ in range(circuit.words)])
    r1cs = cs.r1cs()
    w = fr_to_array(cs.assignment())
    a, b, c = (cpu.spmv(m, w) for m in (r1cs.a, r1cs.b, r1cs.c))
    p = backend.to_host(backend.h_odd_coset(a, b))
    assert np.array_equal(p, backend.to_host(backend.h_odd_coset(a, b, c)))
    h = cpu.h_poly(a, b, c)
    d = EvaluationDomain.for_size(len(a))
    zeta = EvaluationDomain(d.log_size + 1).omega
    coeffs = fr_from_array(h)
    for i in (0, 1, d.size - 1):
        x = zeta * pow(d.omega, i, R) % R
        want = -2 * sum(cf * pow(x, j, R) for j, cf in enumerate(coeffs)) % R
        assert fr_from_array(p[i : i + 1]) == [want]
