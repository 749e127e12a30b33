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


# --- the lean path: thunks, two domain-sized vectors ----------------------


def _lengths(m: int, pattern: str) -> tuple[int, int, int]:
    """Input lengths of a test: all m, all shorter, or mixed (a's domain is m)."""
    return {
        "full": (m, m, m),
        "short": (m // 2 + 1, max(1, m - 1), max(1, min(3, m - 1))),
        "mixed": (m, m // 2 + 1, m),
    }[pattern]


def _inputs(m: int, pattern: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrs = [fr_random(n, rng) for n in _lengths(m, pattern)]
    arrs[0][0] = fr_to_array([R - 1])[0]
    # not reduced mod r: the in-place transform reduces it first
    arrs[0][-1] = np.uint64(2**64 - 1)
    return arrs


def _thunks(arrs, calls: list, exact: bool = False) -> list:
    """Thunks returning fresh device copies (zero-padded to the domain if ``exact``)."""
    import cupy

    m = 1 << max(0, (max(len(x) for x in arrs) - 1).bit_length())

    def thunk(name, x):
        def call():
            calls.append(name)
            y = x
            if exact and len(x) < m:
                y = np.zeros((m, 4), dtype=np.uint64)
                y[: len(x)] = x
            return cupy.array(y)

        return call

    return [thunk(name, x) for name, x in zip("abc", arrs, strict=True)]


@pytest.mark.parametrize("log_m", [1, 3, 6, 10])
@pytest.mark.parametrize("pattern", ["full", "short", "mixed"])
@pytest.mark.parametrize("exact", [False, True], ids=["as-is", "m-rows"])
def test_lean_h_poly_matches_array_path_and_cpu(backend, cpu, log_m, pattern, exact):
    seed = secrets.randbits(32)
    arrs = _inputs(1 << log_m, pattern, seed)
    want = cpu.h_poly(*arrs)
    assert np.array_equal(backend.to_host(backend.h_poly(*arrs)), want)
    calls: list = []
    got = backend.to_host(backend.h_poly(*_thunks(arrs, calls, exact)))
    assert calls == ["a", "b", "c"]
    assert got.shape == want.shape and np.array_equal(got, want), f"seed {seed}"


@pytest.mark.parametrize("which", [(True, False, True), (False, True, False), (False, False, True)])
def test_lean_h_poly_with_arrays_beside_thunks(backend, cpu, which):
    """Arrays given beside thunks are read, never written."""
    import cupy

    arrs = _inputs(64, "mixed", secrets.randbits(32))
    dev = [cupy.array(x) for x in arrs]
    calls: list = []
    thunks = _thunks(arrs, calls, exact=True)
    args = [t if use else d for t, d, use in zip(thunks, dev, which, strict=True)]
    got = backend.to_host(backend.h_poly(*args))
    assert np.array_equal(got, cpu.h_poly(*arrs))
    assert calls == [name for name, use in zip("abc", which, strict=True) if use]
    for d, x in zip(dev, arrs, strict=True):
        assert np.array_equal(backend.to_host(d), x)


def test_lean_h_poly_drops_each_input_before_the_next_thunk(backend, target):
    """b's thunk runs with a's result gone unless it is a's evaluations (then c's
    runs with it gone); the results are taken over, not copied."""
    import weakref

    import cupy

    m = 256
    for exact in (False, True):
        arrs = _inputs(m, "short", secrets.randbits(32))
        refs: dict = {}
        seen: dict = {}

        def thunk(name, x, refs=refs, seen=seen, exact=exact):
            def call():
                seen[name] = {k: r() is not None for k, r in refs.items()}
                y = x.copy()
                if exact:
                    y = np.zeros((m, 4), dtype=np.uint64)
                    y[: len(x)] = x
                y = cupy.array(y)
                try:
                    refs[name] = weakref.ref(y)
                except TypeError:
                    pytest.skip(f"{type(y).__name__} takes no weak references on {target}")
                return y

            return call

        h = backend.hpoly(*(thunk(n, x) for n, x in zip("abc", arrs, strict=True)))
        assert seen["b"] == {"a": exact}
        assert seen["c"] == {"a": False, "b": exact}  # b's vector becomes H
        del h
        assert all(r() is None for r in refs.values())


def test_lean_h_poly_sizes_the_domain_by_a(backend, cpu):
    """b or c longer than a's domain: refused, or accepted with ``rows``."""
    rng = np.random.default_rng(secrets.randbits(32))
    a, b, c = fr_random(5, rng), fr_random(20, rng), fr_random(9, rng)
    calls: list = []
    with pytest.raises(ValueError, match="do not fit the domain of 8"):
        backend.hpoly(*_thunks([a, b, c], calls))
    assert calls == ["a", "b"]
    got = backend.hpoly(*_thunks([a, b, c], []), rows=len(b))
    assert np.array_equal(backend.to_host(got), cpu.h_poly(a, b, c))
    # one row in all: no work, but every thunk is still called once
    calls.clear()
    one = [fr_random(1, rng) for _ in range(3)]
    assert backend.to_host(backend.hpoly(*_thunks(one, calls))).shape == (0, 4)
    assert calls == ["a", "b", "c"]


def test_lean_h_poly_takes_a_non_contiguous_result(backend, cpu):
    import cupy

    arrs = _inputs(32, "full", secrets.randbits(32))
    wide = [np.repeat(x, 2, axis=1) for x in arrs]  # every limb twice

    def thunks():
        return [lambda w=w: cupy.array(w)[:, ::2] for w in wide]

    got = backend.to_host(backend.hpoly(*thunks()))
    assert np.array_equal(got, cpu.h_poly(*arrs))


@pytest.mark.parametrize("full_tables", [False, True])
@pytest.mark.parametrize("log_m", [4, 10])
def test_lean_h_poly_memory(backend, cpu, monkeypatch, full_tables, log_m):
    """Two domain-sized vectors reserved at the peak, none after; the tables it
    made and those vectors are what lean_bytes counts."""
    from cuzk.backends.cuda.hpoly import LEAN, HPoly, lean_bytes
    from cuzk.backends.cuda.ntt import NttEngine

    m = 1 << log_m
    eng = NttEngine(backend.ctx, full_tables=full_tables)
    hp = HPoly(eng)
    budget = backend.ctx.budget
    start = budget.reserved_bytes
    budget.peak_by_operation.pop(LEAN, None)
    high = [start]
    acquire = budget.acquire

    def tracking(nbytes, what, wait=False, own=False):
        hold = acquire(nbytes, what, wait, own)
        high.append(budget.reserved_bytes)
        return hold

    monkeypatch.setattr(budget, "acquire", tracking)
    arrs = _inputs(m, "full", secrets.randbits(32))
    for exact in (False, True):
        got = hp(*_thunks(arrs, [], exact))
        assert np.array_equal(backend.to_host(got), cpu.h_poly(*arrs))
    powers = sum(t.nbytes for t in eng._pow.values())
    tables = powers + sum(int(t.nbytes) for t in eng._tile.values())
    tables_held = powers if full_tables else 0  # full power tables reserve their own share
    assert budget.reserved_bytes == start + tables_held
    assert max(high) - start - tables_held == 2 * 32 * m
    assert budget.peak_by_operation[LEAN] <= lean_bytes(m, full_tables)
    assert lean_bytes(m, full_tables) == 2 * 32 * m + tables + 32  # + the constant 1/(mZ)
    eng.release_tables()
    assert budget.reserved_bytes == start


@pytest.mark.parametrize("log_m", [1, 2, 3, 5, 8, 10])
def test_final_in_place_matches_out_of_place(backend, log_m):
    import cupy

    from cuzk.algebra.domain import EvaluationDomain

    hp = backend.hpoly
    d = EvaluationDomain(log_m)
    m = d.size
    rng = np.random.default_rng(secrets.randbits(32))
    ab, cc = fr_random(m, rng), fr_random(m, rng)
    dev_ab, dev_cc = cupy.array(ab), cupy.array(cc)
    out = cupy.empty((m - 1, 4), dtype=cupy.uint64)
    args = hp._final_args(d)
    grid = ((max(1, (m + 255) // 256)),)
    hp._final(grid, (256,), (out, dev_ab, dev_cc, *args))
    hp._final_inplace(grid, (256,), (dev_ab, dev_cc, *args))
    got = backend.to_host(dev_ab)
    assert np.array_equal(got[: m - 1], backend.to_host(out))
    assert np.array_equal(got[m - 1], ab[m - 1])  # the row past H is left alone
    assert np.array_equal(backend.to_host(dev_cc), cc)
