"""Fr element-wise kernels against Python integers."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from cuda_targets import TARGETS, enter, leave, to_numpy

from cuzk.algebra.arrays import fr_from_array, fr_random, fr_to_array
from cuzk.algebra.fields import R

MONT = (1 << 256) % R
RINV = pow(MONT, -1, R)
EDGE = [0, 1, R - 1, R - 2, 2, (R - 1) // 2, MONT, (1 << 255) % R]


@pytest.fixture(scope="module", params=TARGETS)
def ctx(request):
    enter(request.param)
    from cuzk.backends.cuda.memory import DeviceContext

    yield DeviceContext()
    leave(request.param)


def raw_limbs(values: list[int]) -> np.ndarray:
    """(n, 4) limbs of arbitrary 256-bit values (not necessarily below r)."""
    buf = b"".join(v.to_bytes(32, "little") for v in values)
    return np.frombuffer(buf, dtype="<u8").reshape(-1, 4).copy()


def operands(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh random values with edge values, repeats and non-canonical inputs."""
    rng = np.random.default_rng(seed)
    a, b = fr_random(n, rng), fr_random(n, rng)
    e = fr_to_array(EDGE)
    a[: len(EDGE)] = e
    b[: len(EDGE)] = e[::-1]
    a[len(EDGE) : 2 * len(EDGE)] = e  # every edge value against every other
    b[len(EDGE) : 2 * len(EDGE)] = np.roll(e, 3, axis=0)
    a[20:30] = a[19]  # repeats
    non_canonical = [R, R + 1, 2 * R - 1, 2 * R + 5, (1 << 256) - 1, (1 << 256) - R]
    a[40 : 40 + len(non_canonical)] = raw_limbs(non_canonical)
    b[50 : 50 + len(non_canonical)] = raw_limbs(non_canonical)
    return a, b


def ints(a: np.ndarray) -> list[int]:
    return [v % R for v in fr_from_array(a)]


def test_field_ops_match_python(ctx):
    from cuzk.backends.cuda.fr import FrKernels

    k = FrKernels(ctx)
    seed = secrets.randbits(32)
    a, b = operands(3000, seed)
    x, y = ints(a), ints(b)
    msg = f"seed {seed}"
    assert ints(to_numpy(k.add(a, b))) == [(u + v) % R for u, v in zip(x, y, strict=True)], msg
    assert ints(to_numpy(k.sub(a, b))) == [(u - v) % R for u, v in zip(x, y, strict=True)], msg
    assert fr_from_array(to_numpy(k.mul(a, b))) == [u * v % R for u, v in zip(x, y, strict=True)], (
        msg
    )
    assert fr_from_array(to_numpy(k.mont_mul(a, b))) == [
        u * v * RINV % R for u, v in zip(x, y, strict=True)
    ], msg
    assert fr_from_array(to_numpy(k.reduce(a))) == x, msg
    assert fr_from_array(to_numpy(k.to_mont(a))) == [u * MONT % R for u in x], msg
    assert fr_from_array(to_numpy(k.from_mont(a))) == [u * RINV % R for u in x], msg
    c = secrets.randbelow(R)
    assert fr_from_array(to_numpy(k.scale(a, c))) == [u * c % R for u in x], msg


def test_batch_inverse_matches_python(ctx):
    from cuzk.backends.cuda.fr import FrKernels

    k = FrKernels(ctx)
    seed = secrets.randbits(32)
    a, _ = operands(700, seed)
    a[100:110] = 0  # zeros map to zero and do not break their neighbours
    x = ints(a)
    want = [pow(u, -1, R) if u else 0 for u in x]
    assert fr_from_array(to_numpy(k.inverse(a))) == want, f"seed {seed}"


def test_random_fill_is_canonical_and_seeded(ctx):
    from cuzk.backends.cuda.fr import FrKernels

    k = FrKernels(ctx)
    a, b, c = (to_numpy(k.random(1000, s)) for s in (1, 1, 2))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert all(v < 1 << 254 for v in fr_from_array(a))
    assert len(set(fr_from_array(a))) == 1000


def test_multiply_rate_probe_runs(ctx):
    from cuzk.backends.cuda.fr import FrKernels

    k = FrKernels(ctx)
    data = k.random(4 * 64, 3)
    before = fr_from_array(to_numpy(data))
    assert k.mul_rate_launch(data, 3) == 4 * 64 * 3
    after = fr_from_array(to_numpy(data))
    # Thread i wrote x0+x1+x2+x3 after 3 products by y = x0 + x3 (Montgomery).
    rinv = RINV
    for i in (0, 17, 63):
        xs = before[4 * i : 4 * i + 4]
        y = (xs[0] + xs[3]) % R
        want = sum(v * pow(y * rinv % R, 3, R) for v in xs) % R
        assert after[4 * i] == want
