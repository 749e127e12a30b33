"""Fq, Fq2 and XYZZ point arithmetic of the MSM kernels, bit for bit against Python ints.

Each test runs on the CPU twin (the kernel file compiled as C++, carry flags
emulated) and, marked ``gpu``, on the device, where the PTX carry chains run.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import Fq2, Q, R

MONT = 1 << 384
RINV = pow(MONT, -1, Q)

DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def to_words(values: list[int], nwords: int = 12) -> np.ndarray:
    buf = b"".join(v.to_bytes(4 * nwords, "little") for v in values)
    return np.frombuffer(buf, dtype="<u4").copy()


def from_words(a: np.ndarray, nwords: int = 12) -> list[int]:
    raw = np.ascontiguousarray(a, dtype="<u4").tobytes()
    step = 4 * nwords
    return [int.from_bytes(raw[i : i + step], "little") for i in range(0, len(raw), step)]


def mont(x: int) -> int:
    return x * MONT % Q


def unmont(x: int) -> int:
    return x * RINV % Q


def run(device: str, host_kernels, file: str, defines, name: str, threads: int, args) -> list:
    """Launch one kernel; return the numpy arrays of args after the launch."""
    if device == "cpu":
        host_kernels(file, tuple(defines)).launch(name, threads, args)
        return list(args)
    import cupy

    from cuzk.backends.cuda.loader import load_module

    mod = load_module(file, tuple(defines))
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    mod.get_function(name)((-(-threads // 128),), (128,), tuple(dev))
    return [d.get() if isinstance(d, cupy.ndarray) else d for d in dev]


def edge_fq(rng: random.Random, n: int) -> list[int]:
    fixed = [0, 1, 2, Q - 1, Q - 2, (Q - 1) // 2, (Q + 1) // 2, 2**381 % Q, MONT % Q]
    return fixed + [rng.randrange(Q) for _ in range(n - len(fixed))]


@pytest.mark.parametrize("device", DEVICES)
def test_fq_ops_match_python(device, host_kernels):
    rng = random.Random(1000)
    n = 64
    a = edge_fq(rng, n)
    b = list(reversed(edge_fq(rng, n)))
    out = np.zeros(9 * n * 12, dtype=np.uint32)
    args = (to_words([mont(x) for x in a]), to_words([mont(x) for x in b]), np.uint32(n), out)
    out = run(device, host_kernels, "msm_arith.cu", (), "fq_ops", n, args)[3]
    got = from_words(out)
    rows = [got[k * n : (k + 1) * n] for k in range(9)]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert unmont(rows[0][i]) == (x + y) % Q
        assert unmont(rows[1][i]) == (x - y) % Q
        assert unmont(rows[2][i]) == x * y % Q
        assert unmont(rows[3][i]) == x * x % Q
        assert unmont(rows[4][i]) == -x % Q
        assert unmont(rows[5][i]) == (pow(x, -1, Q) if x else 0)
        assert rows[8][i] == rows[5][i]  # binary Euclid = Fermat
        # to_mont / from_mont act on the raw words (here: Montgomery of x).
        assert rows[6][i] == mont(mont(x))
        assert rows[7][i] == x
        # Fully reduced outputs.
        assert all(rows[k][i] < Q for k in range(9))


def _fq2_words(values: list[Fq2]) -> np.ndarray:
    return to_words([c for v in values for c in (mont(v.c0), mont(v.c1))])


def _fq2_from(words: np.ndarray) -> list[Fq2]:
    ints = [unmont(x) for x in from_words(words)]
    return [Fq2(ints[i], ints[i + 1]) for i in range(0, len(ints), 2)]


@pytest.mark.parametrize("device", DEVICES)
def test_fq2_ops_match_python(device, host_kernels):
    rng = random.Random(7)
    n = 48
    a = [Fq2(0, 0), Fq2(1, 0), Fq2(0, 1), Fq2(Q - 1, Q - 1)]
    a += [Fq2(rng.randrange(Q), rng.randrange(Q)) for _ in range(n - 4)]
    b = [Fq2(rng.randrange(Q), rng.randrange(Q)) for _ in range(n)]
    out = np.zeros(6 * n * 24, dtype=np.uint32)
    args = (_fq2_words(a), _fq2_words(b), np.uint32(n), out)
    got = _fq2_from(run(device, host_kernels, "msm_arith.cu", (), "fq2_ops", n, args)[3])
    rows = [got[k * n : (k + 1) * n] for k in range(6)]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert rows[0][i] == x + y
        assert rows[1][i] == x - y
        assert rows[2][i] == x * y
        assert rows[3][i] == x * x
        assert rows[4][i] == (Fq2(0, 0) if x.is_zero() else x.inverse())
        assert rows[5][i] == rows[4][i]


def _affine_words(points, group) -> np.ndarray:
    vals = []
    for p in points:
        if p is None:
            vals += [0, 0] if group is G1 else [0, 0, 0, 0]
        elif group is G1:
            vals += [mont(p[0]), mont(p[1])]
        else:
            vals += [mont(p[0].c0), mont(p[0].c1), mont(p[1].c0), mont(p[1].c1)]
    return to_words(vals)


def _xyzz_affine(words: np.ndarray, group) -> list:
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, xyzz_to_affine

    spec = G1_SPEC if group is G1 else G2_SPEC
    w = words.reshape(-1, spec.xyzz_words)
    return [xyzz_to_affine(row, spec) for row in w]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_point_ops_match_reference(device, group, host_kernels):
    rng = random.Random(11)
    g = group.generator
    pts = [group.mul(g, rng.randrange(1, R)) for _ in range(6)]
    p_list, q_list = [], []
    for p in pts:
        p_list += [p, p, p, p, None, p]
        q_list += [pts[0], p, group.neg(p), None, p, None]
    n = len(p_list)
    ks = [rng.randrange(0, 2**32) for _ in range(n - 3)] + [0, 1, 2**32 - 1]
    spec_words = 48 if group is G1 else 96
    out = np.zeros(5 * n * spec_words, dtype=np.uint32)
    defines = () if group is G1 else ("-DCUZK_G2",)
    args = (
        _affine_words(p_list, group),
        _affine_words(q_list, group),
        np.array(ks, dtype=np.uint32),
        np.uint32(n),
        out,
    )
    got = _xyzz_affine(
        run(device, host_kernels, "msm_arith.cu", defines, "ec_ops", n, args)[4], group
    )
    rows = [got[k * n : (k + 1) * n] for k in range(5)]
    for i, (p, q) in enumerate(zip(p_list, q_list, strict=True)):
        assert rows[0][i] == group.add(p, q), i
        assert rows[1][i] == group.add(p, q), i
        assert rows[2][i] == group.double(p), i
        assert rows[3][i] == group.mul(p, ks[i]), i
        assert rows[4][i] == group.add(group.neg(p), q), i


def _affine_from(words: np.ndarray, group) -> list:
    ints = [unmont(x) for x in from_words(words)]
    per = 2 if group is G1 else 4
    out = []
    for i in range(0, len(ints), per):
        c = ints[i : i + per]
        if not any(c):
            out.append(None)
        elif group is G1:
            out.append((c[0], c[1]))
        else:
            out.append((Fq2(c[0], c[1]), Fq2(c[2], c[3])))
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_affine_pair_sums_match_reference(device, group, host_kernels):
    """Every case of the batched-affine pair sum: distinct x, doubling,
    opposite points, either side at infinity, both at infinity."""
    rng = random.Random(12)
    g = group.generator
    pts = [group.mul(g, rng.randrange(1, R)) for _ in range(5)]
    p_list, q_list = [None], [None]
    for p in pts:
        p_list += [p, p, p, p, None]
        q_list += [pts[0] if p != pts[0] else pts[1], p, group.neg(p), None, p]
    n = len(p_list)
    out = np.zeros(n * (24 if group is G1 else 48), dtype=np.uint32)
    kinds = np.zeros(n, dtype=np.uint32)
    defines = () if group is G1 else ("-DCUZK_G2",)
    args = (_affine_words(p_list, group), _affine_words(q_list, group), np.uint32(n), out, kinds)
    res = run(device, host_kernels, "msm_arith.cu", defines, "affine_pairs", n, args)
    got = _affine_from(res[3], group)
    for i, (p, q) in enumerate(zip(p_list, q_list, strict=True)):
        assert got[i] == group.add(p, q), i
    # SUM, DBL, FIRST, SECOND, INF: each case taken.
    assert set(res[4].tolist()) == {0, 1, 2, 3, 4}
