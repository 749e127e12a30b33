"""The native C kernels against their Python twins, bit for bit.

Every kernel runs in both Montgomery arithmetics (x86-64 MULX/ADX assembly
where the CPU has it, portable C) and with one and two threads (the NTT and
the MSM split their work differently with more than one).
"""

import functools
import random

import numpy as np
import pytest

from cuzk.algebra import pairing
from cuzk.algebra.arrays import (
    fr_from_array,
    fr_random,
    fr_to_array,
    g1_from_array,
    g1_to_array,
    g2_from_array,
    g2_to_array,
)
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import Q, R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends import native
from cuzk.backends.cpu import CpuBackend

py = CpuBackend(native=False)
nat = CpuBackend(native=True) if native.available() else None

ARITHS = ["adx", "portable"] if native.available() and native.adx_supported() else ["portable"]


@pytest.fixture(autouse=True)
def _require_native():
    """`pip install -e .` builds the kernels (CI does); a missing build fails
    these tests loudly instead of skipping them. (A `-m gpu` run on a source
    tree deselects them.)"""
    if not native.available():
        pytest.fail(f"native kernels not built ({native.unavailable_reason()}): pip install -e .")


@pytest.fixture(params=[(a, t) for a in ARITHS for t in (1, 2)], ids=lambda p: f"{p[0]}-t{p[1]}")
def mode(request):
    """Each test under each arithmetic and thread count; restored afterwards."""
    arith, threads = request.param
    old_arith, old_threads = native.arithmetic(), native.threads()
    native.set_arithmetic(arith)
    native.set_threads(threads)
    yield request.param
    native.set_arithmetic(old_arith)
    native.set_threads(old_threads)


def _with_edges(a: np.ndarray, rng: random.Random) -> np.ndarray:
    """Overwrite some entries with 0, 1, r − 1 and repeats of other entries."""
    a = a.copy()
    edges = fr_to_array([0, 1, R - 1])
    for i in rng.sample(range(len(a)), min(len(a), 6)):
        a[i] = edges[rng.randrange(3)] if rng.random() < 0.6 else a[rng.randrange(len(a))]
    return a


# --- NTT family -----------------------------------------------------------------


@pytest.mark.parametrize("log_n", range(15))
def test_ntt_family_matches_python_twin(log_n):
    rng = np.random.default_rng(log_n)
    a = _with_edges(fr_random(1 << log_n, rng), random.Random(log_n))
    # the Python twin is slow: large sizes only check two of the four transforms
    ops = ("ntt", "intt", "coset_ntt", "coset_intt") if log_n <= 11 else ("ntt", "coset_intt")
    for op in ops:
        assert np.array_equal(getattr(nat, op)(a), getattr(py, op)(a)), op


@pytest.mark.parametrize("log_n", [0, 1, 4, 11, 12, 13])
def test_ntt_family_in_every_mode(mode, log_n):
    """Sizes on both sides of the threading threshold (segments of 2^10)."""
    rng = np.random.default_rng(100 + log_n)
    a = _with_edges(fr_random(1 << log_n, rng), random.Random(log_n))
    for op, inverse, coset in (
        ("ntt", False, False),
        ("intt", True, False),
        ("coset_ntt", False, True),
        ("coset_intt", True, True),
    ):
        got = native.ntt(a, inverse=inverse, coset=coset)
        if log_n <= 11:
            assert np.array_equal(got, getattr(py, op)(a)), op
        back = native.ntt(got, inverse=not inverse, coset=coset)
        assert np.array_equal(back, a), op


def test_ntt_of_constants():
    n = 16
    assert fr_from_array(native.ntt(fr_to_array([1] + [0] * (n - 1)))) == [1] * n
    assert fr_from_array(native.ntt(fr_to_array([0] * n))) == [0] * n
    # all r − 1 (= −1): the NTT is −n at index 0 and zero elsewhere
    assert fr_from_array(native.ntt(fr_to_array([R - 1] * n))) == [R - n] + [0] * (n - 1)


def _raw(values: list[int]) -> np.ndarray:
    """Any 256-bit values as (n, 4) limbs (fr_to_array wants them below r)."""
    buf = b"".join(v.to_bytes(32, "little") for v in values)
    return np.frombuffer(buf, dtype="<u8").reshape(-1, 4).copy()


NON_CANONICAL = [R, R + 7, (1 << 256) - 1, 2 * R + 1, (1 << 256) - R]


def test_non_canonical_inputs_are_reduced():
    """Values ≥ r are taken mod r everywhere, as the Python twins' ints are."""
    raw = _raw(NON_CANONICAL * 3 + [5])
    reduced = fr_to_array([v % R for v in NON_CANONICAL * 3 + [5]])
    for op in ("ntt", "intt", "coset_ntt", "coset_intt"):
        assert np.array_equal(getattr(nat, op)(raw), getattr(nat, op)(reduced)), op
        assert np.array_equal(getattr(nat, op)(raw), getattr(py, op)(raw)), op
    assert np.array_equal(nat.h_poly(raw, raw, raw[:7]), py.h_poly(raw, raw, raw[:7]))
    assert np.array_equal(nat.h_odd_coset(raw, raw[:9]), py.h_odd_coset(raw, raw[:9]))
    m = SparseMatrix.from_rows([[(0, 1), (1, 3)], [(2, R - 1)], []], num_cols=3)
    m_raw = SparseMatrix(m.indptr, m.indices, _raw([R + 1, (1 << 256) - 1, 2 * R - 1]), 3)
    assert np.array_equal(nat.spmv(m_raw, raw[:3]), py.spmv(m_raw, raw[:3]))
    pts = [G1.generator, G1.neg(G1.generator), None, pairing.g1_mul(G1.generator, 9)]
    ks = _raw([R + 1, (1 << 256) - 1, R, 2 * R + 5])
    want = G1.msm(pts, [k % R for k in [R + 1, (1 << 256) - 1, R, 2 * R + 5]])
    assert nat.msm_g1(nat.prepare_g1(g1_to_array(pts)), ks) == want
    assert py.msm_g1(py.prepare_g1(g1_to_array(pts)), ks) == want
    table = native.FixedBaseTable("G1", g1_to_array([G1.generator])[0], expected=4)
    assert g1_from_array(table.mul_many(ks)) == [
        pairing.g1_mul(G1.generator, k % R) for k in [R + 1, (1 << 256) - 1, R, 2 * R + 5]
    ]


def test_ntt_rejects_bad_shapes():
    with pytest.raises(ValueError, match="power of two"):
        native.ntt(fr_to_array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\(n, 4\)"):
        native.ntt(np.zeros((4, 3), dtype=np.uint64))


# --- H polynomial ----------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 13, 64, 1000, 2049])
def test_h_poly_matches_python_twin(mode, n):
    rng = np.random.default_rng(n)
    a = _with_edges(fr_random(n, rng), random.Random(n))
    b = fr_random(n, rng)
    c = fr_random(max(1, n - 2), rng)  # shorter: zero-padded
    assert np.array_equal(native.h_poly(a, b, c), py.h_poly(a, b, c))


@pytest.mark.parametrize("n", [1, 2, 5, 64, 1000, 2049])
def test_h_odd_coset_matches_python_twin(mode, n):
    """snarkjs's H: with c given, and with c defaulting to a∘b."""
    rng = np.random.default_rng(200 + n)
    a = _with_edges(fr_random(n, rng), random.Random(n))
    b = fr_random(max(1, n - 1), rng)
    c = fr_random(n, rng)
    assert np.array_equal(nat.h_odd_coset(a, b), py.h_odd_coset(a, b))
    assert np.array_equal(nat.h_odd_coset(a, b, c), py.h_odd_coset(a, b, c))


def test_h_poly_of_a_satisfied_system_has_no_remainder():
    """a·b = c on the domain: H·Z = A·B − C, so H has exactly m − 1 coefficients."""
    rng = np.random.default_rng(7)
    a, b = fr_random(64, rng), fr_random(64, rng)
    c = fr_to_array([x * y % R for x, y in zip(fr_from_array(a), fr_from_array(b), strict=True)])
    h = native.h_poly(a, b, c)
    assert h.shape == (63, 4)
    assert np.array_equal(h, py.h_poly(a, b, c))


# --- sparse mat-vec ------------------------------------------------------------------


def _random_matrix(rng: random.Random, rows: int, cols: int) -> SparseMatrix:
    pool = [1, R - 1, 2, 0]
    out = []
    for i in range(rows):
        if i % 5 == 0:
            out.append([])  # empty rows
            continue
        cols_here = rng.sample(range(cols), rng.randrange(1, min(cols, 6) + 1))
        out.append(
            [(j, rng.choice(pool) if rng.random() < 0.5 else rng.randrange(R)) for j in cols_here]
        )
    return SparseMatrix.from_rows(out, num_cols=cols)


@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 3), (300, 50), (5000, 700)])
def test_spmv_matches_python_twin(mode, rows, cols):
    rng = random.Random(rows)
    m = _random_matrix(rng, rows, cols)
    w = _with_edges(fr_random(cols, np.random.default_rng(rows)), rng)
    got = nat.spmv(m, w)
    assert np.array_equal(got, py.spmv(m, w))
    assert not got[::5].any()  # the empty rows


def test_spmv_of_an_empty_matrix_and_bad_input():
    m = SparseMatrix.from_rows([[], []], num_cols=2)
    assert np.array_equal(nat.spmv(m, fr_to_array([3, 4])), np.zeros((2, 4), np.uint64))
    with pytest.raises(ValueError, match="vector of 3 for a matrix of 2 columns"):
        nat.spmv(m, fr_to_array([1, 2, 3]))


# --- MSM -------------------------------------------------------------------------------


def _g1_points(n: int, rng: random.Random) -> list:
    fb = native.FixedBaseTable("G1", g1_to_array([G1.generator])[0], expected=n)
    ks = fr_to_array([rng.randrange(1, R) for _ in range(n)])
    return g1_from_array(fb.mul_many(ks))


def _g2_points(n: int, rng: random.Random) -> list:
    fb = native.FixedBaseTable("G2", g2_to_array([G2.generator])[0], expected=n)
    ks = fr_to_array([rng.randrange(1, R) for _ in range(n)])
    return g2_from_array(fb.mul_many(ks))


def _awkward(points: list, scalars: list, rng: random.Random, neg) -> tuple[list, list]:
    """Equal points, a negated point, infinity; scalars 0, 1, r − 1, 2 and repeats."""
    points, scalars = list(points), list(scalars)
    n = len(points)
    if n >= 6:
        points[1] = points[0]
        points[2] = neg(points[0])
        points[3] = None
        points[4] = points[5]
    pool = [0, 1, R - 1, 2]
    for i in rng.sample(range(n), n // 2):
        scalars[i] = rng.choice(pool)
    if n >= 8:
        scalars[6] = scalars[7]
    return points, scalars


@pytest.mark.parametrize("n", [1, 2, 7, 33, 300, 3000])
def test_msm_g1_matches_arkworks(mode, n):
    rng = random.Random(n)
    pts, ks = _awkward(_g1_points(n, rng), [rng.randrange(R) for _ in range(n)], rng, G1.neg)
    bases, scalars = g1_to_array(pts), fr_to_array(ks)
    got = nat.msm_g1(nat.prepare_g1(bases), scalars)
    assert got == py.msm_g1(py.prepare_g1(bases), scalars)
    if n <= 7:
        assert got == G1.msm(pts, ks)  # the pure-Python oracle
    half = n // 2  # fewer scalars than bases
    assert nat.msm_g1(nat.prepare_g1(bases), scalars[:half]) == py.msm_g1(
        py.prepare_g1(bases), scalars[:half]
    )


@pytest.mark.parametrize("n", [1, 6, 40, 257])
def test_msm_g2_matches_arkworks(mode, n):
    rng = random.Random(1000 + n)
    pts, ks = _awkward(_g2_points(n, rng), [rng.randrange(R) for _ in range(n)], rng, G2.neg)
    bases, scalars = g2_to_array(pts), fr_to_array(ks)
    got = nat.msm_g2(nat.prepare_g2(bases), scalars)
    assert got == py.msm_g2(py.prepare_g2(bases), scalars)


def test_msm_bucket_conflicts_and_cancellations():
    """Many additions into one bucket (repeated points and scalars) take the
    XYZZ side sums; P and −P with the same scalar cancel to infinity."""
    rng = random.Random(5)
    pts = _g1_points(50, rng)
    k = rng.randrange(R)
    for bases, ks in (
        ([pts[0]] * 2000, [k] * 2000),  # every point in the same bucket of every window
        (pts * 40, [rng.randrange(R) for _ in range(2000)]),
        ([pts[0]] * 2000, [rng.randrange(R) for _ in range(2000)]),
    ):
        b, s = g1_to_array(bases), fr_to_array(ks)
        assert nat.msm_g1(nat.prepare_g1(b), s) == py.msm_g1(py.prepare_g1(b), s)
    ks = [rng.randrange(2, R) for _ in range(500)]
    b = g1_to_array(pts * 10 + [G1.neg(p) for p in pts * 10])
    assert nat.msm_g1(nat.prepare_g1(b), fr_to_array(ks + ks)) is None


def test_msm_zero_one_fast_path():
    """Scalars 0 and 1 only: the sum of the bases of the ones."""
    rng = random.Random(9)
    pts = _g1_points(5000, rng)
    bits = [rng.randrange(2) for _ in pts]
    got = nat.msm_g1(nat.prepare_g1(g1_to_array(pts)), fr_to_array(bits))
    assert got == G1.sum([p for p, b in zip(pts, bits, strict=True) if b])
    assert nat.msm_g1(nat.prepare_g1(g1_to_array(pts)), fr_to_array([0] * 5000)) is None
    g2pts = _g2_points(300, rng)
    bits = [rng.randrange(2) for _ in g2pts]
    got = nat.msm_g2(nat.prepare_g2(g2_to_array(g2pts)), fr_to_array(bits))
    assert got == G2.sum([p for p, b in zip(g2pts, bits, strict=True) if b])


def test_msm_rejects_bad_input():
    bases = nat.prepare_g1(g1_to_array([G1.generator]))
    with pytest.raises(ValueError, match="2 scalars over 1 bases"):
        nat.msm_g1(bases, fr_to_array([1, 2]))
    bad = g1_to_array([G1.generator])
    bad[0, 1] = np.frombuffer(Q.to_bytes(48, "little"), dtype="<u8")  # y = q: not canonical
    with pytest.raises(ValueError, match="point 0 has a coordinate not reduced mod q"):
        nat.prepare_g1(bad)
    # off the curve, like a corrupted key file: refused as the Python path's arkworks does
    off = g1_to_array([G1.generator, G1.generator])
    off[1, 0, 0] ^= np.uint64(2)
    with pytest.raises(ValueError, match="point 1 is not on the G1 curve"):
        nat.prepare_g1(off)
    with pytest.raises(ValueError, match="not on the G1 curve"):
        py.prepare_g1(off)
    off2 = g2_to_array([G2.generator])
    off2[0, 1, 1, 5] ^= np.uint64(1)
    with pytest.raises(ValueError, match="point 0 is not on the G2 curve"):
        nat.prepare_g2(off2)
    with pytest.raises(ValueError, match="fixed base: point 0 is not on the G1 curve"):
        native.FixedBaseTable("G1", off[1])
    assert nat.msm_g2(nat.prepare_g2(g2_to_array([])), fr_to_array([])) is None


# --- fixed-base multiples ---------------------------------------------------------------


def _digits(k: int, c: int) -> list[int]:
    """The signed digits of msm_plan.h, in Python."""
    out = []
    for w in range(255 // c + 1):
        bits = ((k << 1) >> (w * c)) & ((1 << (c + 1)) - 1)
        raw = bits >> 1
        out.append(raw + (bits & 1) - ((raw >> (c - 1)) << c))
    return out


def _hits_side_sum(k: int, c: int) -> bool:
    """Some partial sum equals ± the next table entry (mod r): a doubling or cancellation."""
    acc = 0
    for w, d in enumerate(_digits(k, c)):
        t = d * (1 << (c * w)) % R
        if d and acc and (acc == t or (acc + t) % R == 0):
            return True
        acc = (acc + t) % R
    return False


def test_digits_recompose():
    rng = random.Random(3)
    for c in (1, 2, 5, 13, 16, 20):
        for k in [0, 1, R - 1, *(rng.randrange(R) for _ in range(20))]:
            ds = _digits(k, c)
            assert sum(d << (c * w) for w, d in enumerate(ds)) == k
            assert all(-(1 << (c - 1)) <= d <= 1 << (c - 1) for d in ds)


@functools.cache
def _fixed_base_case(group: str) -> tuple[list[int], list]:
    """Scalars and their multiples of the generator by arkworks (computed once)."""
    rng = random.Random(11)
    ks = [0, 1, 2, R - 1, R - 2, *(rng.randrange(R) for _ in range(1500 if group == "G1" else 300))]
    ks.append(2**255 + 3 * 2**253 - R)  # hits a side sum with 4-bit windows (below)
    mul, gen = (pairing.g1_mul, G1.generator) if group == "G1" else (pairing.g2_mul, G2.generator)
    return ks, [mul(gen, k) for k in ks]


@pytest.mark.parametrize("group", ["G1", "G2"])
def test_fixed_base_matches_arkworks(mode, group):
    ks, expected = _fixed_base_case(group)
    # the last scalar's window sums hit a doubling with 4-bit windows (found by
    # search), which takes the side sums
    assert _hits_side_sum(ks[-1], 4)
    if group == "G1":
        gen, to_arr, from_arr = G1.generator, g1_to_array, g1_from_array
    else:
        gen, to_arr, from_arr = G2.generator, g2_to_array, g2_from_array
    for window in (None, 4):
        table = native.FixedBaseTable(group, to_arr([gen])[0], len(ks), window=window)
        assert from_arr(table.mul_many(fr_to_array(ks))) == expected


def test_fixed_base_of_infinity_and_bad_input():
    table = native.FixedBaseTable("G1", np.zeros((2, 6), np.uint64), expected=4)
    assert g1_from_array(table.mul_many(fr_to_array([0, 1, 5]))) == [None] * 3
    with pytest.raises(ValueError, match="group"):
        native.FixedBaseTable("G3", np.zeros((2, 6), np.uint64))


# --- the backend's switch ------------------------------------------------------------------


def test_backend_falls_back_when_unbuilt(monkeypatch, caplog):
    from cuzk.backends import cpu

    monkeypatch.setattr(native, "available", lambda: False)
    monkeypatch.setattr(cpu, "_warned_unbuilt", False)
    with caplog.at_level("WARNING", logger="cuzk.backends.cpu"):
        be = CpuBackend()
    assert not be.native
    assert "native CPU kernels not built" in caplog.text
    with pytest.raises(RuntimeError, match="not built"):
        CpuBackend(native=True)


def test_backend_honours_the_environment(monkeypatch):
    monkeypatch.setenv("CUZK_CPU_NATIVE", "0")
    assert not CpuBackend().native
    assert not native.enabled()
    monkeypatch.setenv("CUZK_CPU_NATIVE", "1")
    assert CpuBackend().native


def test_setup_and_prove_agree_with_the_python_path(monkeypatch):
    """Seeded setup and a proof with fixed r, s: identical bytes on both paths."""
    from cuzk.algebra.arrays import fr_to_array as to_arr
    from cuzk.circuits.demo import DemoCircuit
    from cuzk.groth16 import prover, setup, verifier
    from cuzk.r1cs import ConstraintSystem

    circuit = DemoCircuit(rounds=20, words=1)
    cs = ConstraintSystem(witness=False)
    circuit.synthesize(cs, None, None)
    r1cs = cs.r1cs()
    cs = ConstraintSystem(witness=True)
    circuit.synthesize(cs, 3, [0xDEADBEEF])
    assignment = to_arr(cs.assignment())

    pk_native = setup.setup(r1cs, seed=4)
    monkeypatch.setenv("CUZK_CPU_NATIVE", "0")
    pk_python = setup.setup(r1cs, seed=4)
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        assert np.array_equal(getattr(pk_native, name), getattr(pk_python, name)), name
    assert pk_native.vk == pk_python.vk

    proofs = [
        prover.prove(prover.prepare(pk_native, r1cs, be), r1cs, assignment, r=5, s=6)
        for be in (nat, py)
    ]
    assert proofs[0].to_bytes() == proofs[1].to_bytes()
    assert verifier.verify(pk_native.vk, cs.public_inputs(), proofs[0])


@pytest.mark.parametrize("op", ["fr_spmv", "fr_rmatvec"])
def test_sparse_kernels_name_a_broken_csr(op):
    """Both sparse entry points check a CSR the same way and say where it breaks."""
    lib = native._lib()
    coeffs = np.ones((3, 4), dtype=np.uint64)
    vec = np.zeros((2, 4), dtype=np.uint64)  # 2 columns for spmv, 2 rows for rmatvec
    out = np.zeros((2, 4), dtype=np.uint64)

    def call(indptr, indices):
        args = [np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64)]
        args += [coeffs, vec, out]
        getattr(lib, op)(*args, *([None] if op == "fr_rmatvec" else []))

    call([0, 1, 3], [0, 1, 1])  # well formed
    with pytest.raises(ValueError, match=r"CSR of 2 rows needs 3 row pointers \(has 2\)"):
        call([0, 3], [0, 1, 1])
    with pytest.raises(ValueError, match=r"end at the entry count \(3\); broken at row 0"):
        call([0, 2, 1], [0, 1, 1])  # ends short of the entries
    with pytest.raises(ValueError, match=r"never decrease .* broken at row 1"):
        call([0, 4, 3], [0, 1, 1])  # row 1 runs backwards
    with pytest.raises(ValueError, match=r"CSR entry 2: column outside \[0, 2\)"):
        call([0, 1, 3], [0, 1, 5])


def test_prepare_into_in_slices_reports_the_first_bad_point(monkeypatch):
    """Bases converted in slices on several threads are the one-call result,
    and of two bad points the lower index is reported, whichever slice ends first."""
    monkeypatch.setattr(native, "PREPARE_SLICE", 4)
    monkeypatch.setattr(native, "threads", lambda: 4)
    pts = g1_to_array([G1.generator] * 40)
    one, many = np.empty_like(pts), np.empty_like(pts)
    monkeypatch.setattr(native, "PREPARE_SLICE", 1 << 30)
    assert native.prepare_into(pts, one) == (-1, 0)
    monkeypatch.setattr(native, "PREPARE_SLICE", 4)
    assert native.prepare_into(pts, many) == (-1, 0)
    assert np.array_equal(one, many)
    bad = pts.copy()
    bad[33, 0, 0] ^= np.uint64(2)  # off the curve, in the last slice
    bad[17, 1] = np.frombuffer(Q.to_bytes(48, "little"), dtype="<u8")  # y = q, in the second
    assert native.prepare_into(bad, many) == (17, native.PREPARE_NOT_CANONICAL)
    bad[17] = pts[17]
    assert native.prepare_into(bad, many) == (33, native.PREPARE_OFF_CURVE)
