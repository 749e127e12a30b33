"""Compact scalar sets (zeros, ones and full values): the dense array they
stand for, bit for bit, however the entries fall; the CPU backend's MSMs
over them equal the dense sets'."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_random, fr_to_array, g1_to_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import R
from cuzk.backends import compact
from cuzk.backends.base import Compact, Gathered
from cuzk.backends.cpu import CpuBackend


def mixed(n: int, ones: float, full: float, seed: int) -> np.ndarray:
    """n scalars, about ``ones`` of them 1 and ``full`` of them random (the rest
    0), with non-canonical values that are ≡ 0 or 1 and values 1 in a high
    limb among the full ones."""
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    out = np.zeros((n, 4), dtype=np.uint64)
    out[u < ones, 0] = 1
    pick = (u >= ones) & (u < ones + full)
    out[pick] = fr_random(int(pick.sum()), rng)
    odd = np.flatnonzero(pick)[:4]
    specials = [R, R + 1, 1 << 64, (1 << 192) + 1]  # full, though ≡ 0, 1 or a power
    for i, v in zip(odd, specials, strict=False):
        out[i] = fr_to_array([v % (1 << 256)])[0]
    return out


CASES = [
    pytest.param(0, 0.0, 0.0, id="empty"),
    pytest.param(1, 1.0, 0.0, id="a-one"),
    pytest.param(13, 0.0, 0.0, id="all-zero"),
    pytest.param(1037, 1.0, 0.0, id="all-one"),
    pytest.param(1029, 0.0, 1.0, id="all-full"),
    pytest.param(3001, 0.46, 0.03, id="porep-like"),
    pytest.param(2048, 0.3, 0.3, id="blocks-exact"),
]


@pytest.mark.parametrize("n, ones, full", CASES)
def test_classify_keeps_the_dense_set(n, ones, full):
    dense = mixed(n, ones, full, seed=n)
    for step in (512, 1024, compact.CLASSIFY_STEP):
        c = compact.classify(np, dense, step=step)
        assert isinstance(c, Compact) and len(c) == n and c.shape == (n, 4)
        assert np.array_equal(c.dense(), dense)
        is_one = (dense[:, 0] == 1) & (dense[:, 1:] == 0).all(axis=1)
        is_zero = (dense == 0).all(axis=1)
        assert c.n_ones == int(is_one.sum())
        assert c.n_full == int((~is_one & ~is_zero).sum())
        assert c.nbytes == compact.compact_bytes(n, c.n_full)
        # the full values only, in order
        assert np.array_equal(c.values, dense[~is_one & ~is_zero])


@pytest.mark.parametrize("n, ones, full", CASES)
def test_expand_any_range_and_rank(n, ones, full):
    """Ranges that start and end inside bytes and blocks give the dense rows."""
    dense = mixed(n, ones, full, seed=100 + n)
    c = compact.classify(np, dense, step=512)
    is_full = ~((dense[:, 1:] == 0).all(axis=1) & (dense[:, 0] <= 1))
    before = np.concatenate([[0], np.cumsum(is_full)])
    rng = random.Random(n)
    edges = {0, n, *(rng.randrange(n + 1) for _ in range(20))}
    edges |= {e for e in (7, 8, 9, 511, 512, 513, 1023, 1025) if e <= n}
    for i in sorted(edges):
        assert c.rank(i) == before[i]
    for lo in sorted(edges):
        for hi in sorted(edges):
            if lo <= hi:
                assert np.array_equal(compact.expand(np, c, lo, hi), dense[lo:hi])
    for chunk in (1, 3, 8, 77, 512, 1000):
        per = [int(before[min(n, lo + chunk)] - before[lo]) for lo in range(0, n, chunk)]
        want = max(per, default=0)
        assert c.most_full(chunk) == want
    with pytest.raises(IndexError):
        c.rank(n + 1)


def test_a_selection_and_a_tail():
    """A query's rows by its selection (repeats and any order) and the
    assignment's tail past its inputs (L's scalars)."""
    w = mixed(700, 0.5, 0.1, seed=3)
    idx = np.array([699, 0, 5, 5, 300, 1, 2, 698], dtype=np.int64)
    idx = np.concatenate([idx, np.random.default_rng(4).integers(0, 700, 600)])
    assert np.array_equal(compact.classify(np, w, idx, step=512).dense(), w[idx])
    assert np.array_equal(compact.classify(np, w, start=3, step=512).dense(), w[3:])
    assert len(compact.classify(np, w, start=700)) == 0
    with pytest.raises(ValueError, match="multiple of 512"):
        compact.classify(np, w, step=100)


def test_a_host_allocator_holds_the_sets_arrays():
    """Bitmaps and full values live in the buffers the allocator gave (pinned
    memory on a GPU), which the set keeps alive."""
    given: list[int] = []

    def alloc(nbytes: int) -> bytearray:
        given.append(nbytes)
        return bytearray(nbytes)

    dense = mixed(1000, 0.4, 0.2, seed=5)
    c = compact.classify(np, dense, alloc=alloc, step=512)
    assert given == [2 * 125, 32 * c.n_full] and len(c.holds) == 2
    assert np.array_equal(c.dense(), dense)


def test_classification_is_linear_and_compact():
    """2^20 entries at PoRep's proportions: about a tenth of the dense bytes,
    classified in well under a second (vectorised: no loop over entries)."""
    n = 1 << 20
    dense = mixed(n, 0.46, 0.03, seed=6)
    t = time.perf_counter()
    c = compact.classify(np, dense, step=1 << 18)
    took = time.perf_counter() - t
    assert c.nbytes < dense.nbytes / 8
    assert took < 1.0
    assert np.array_equal(compact.expand(np, c, 12345, 12345 + 70001), dense[12345:82346])


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_cpu_msms_over_compact_sets_are_the_dense_sets(native):
    if native and not CpuBackend(native=None).native:
        pytest.skip("the native kernels are not built here")
    cpu = CpuBackend(native=native)
    rng = random.Random(9)
    n1, n2 = (40, 9) if native else (12, 4)
    g1 = [pairing.g1_mul(G1.generator, rng.randrange(1, R)) for _ in range(n1)]
    g2 = [pairing.g2_mul(G2.generator, rng.randrange(1, R)) for _ in range(n2)]
    b1, b2 = cpu.prepare_g1(g1_to_array(g1)), cpu.prepare_g2(g2_to_array(g2))
    w = mixed(3 * n1, 0.45, 0.2, seed=10)
    idx = cpu.prepare_index(np.random.default_rng(11).integers(0, 3 * n1, n1))
    sets = [cpu.compact(w, idx), cpu.compact(w, start=2 * n1 + 3), cpu.compact(w[:0])]
    plain = [w[idx], w[2 * n1 + 3 :], w[:0]]
    assert [len(s) for s in sets] == [len(p) for p in plain]
    assert cpu.msm_g1_many(b1, sets) == cpu.msm_g1_many(b1, plain)
    # beside gathered and plain sets in one call
    mixed_sets = [Gathered(w, idx), sets[1], plain[0]]
    assert cpu.msm_g1_many(b1, mixed_sets) == [cpu.msm_g1(b1, p) for p in plain[:2] + plain[:1]]
    small = cpu.compact(w[:n2])
    assert cpu.msm_g2_many(b2, [small]) == [cpu.msm_g2(b2, w[:n2])]


def test_a_classification_step_fits_the_set_and_the_room():
    assert compact.classify_step(0, 1 << 40) == compact.BLOCK
    assert compact.classify_step(1000, 1 << 40) == 1024
    assert compact.classify_step(10**9, 1 << 40) == compact.CLASSIFY_STEP
    for room in (1 << 20, 16 << 20, 100 << 20):
        step = compact.classify_step(10**9, room)
        assert step % compact.BLOCK == 0
        assert compact.classify_step_bytes(step) <= room // 2 or step == compact.BLOCK
    assert compact.classify_step(10**9, 0) == compact.BLOCK
