"""The NTT family on the GPU, bit for bit against the CPU backend."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from cuda_targets import to_numpy

from cuzk.algebra.arrays import fr_from_array, fr_random, fr_to_array
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R

OPS = ("ntt", "intt", "coset_ntt", "coset_intt")


def sizes(target: str) -> list[int]:
    # Every pass structure: one pass (k <= 9, tiles of 2..512), two, three.
    return list(range(0, 15)) if target == "gpu" else [0, 1, 2, 3, 4, 7, 10, 12]


def test_transforms_match_cpu(backend, cpu, target):
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    for k in sizes(target):
        x = fr_random(1 << k, rng)
        for op in OPS:
            got = backend.to_host(getattr(backend, op)(x))
            assert np.array_equal(got, getattr(cpu, op)(x)), f"{op} 2^{k}, seed {seed}"


@pytest.mark.parametrize(
    "fill",
    [
        lambda n, rng: [0] * n,
        lambda n, rng: [R - 1] * n,
        lambda n, rng: [1] + [0] * (n - 1),
        lambda n, rng: [int(v) for v in rng.integers(0, 3, n)],  # repeated small values
        lambda n, rng: [R - 1, 1, 0] * (n // 3) + [5] * (n % 3),
    ],
)
def test_edge_inputs_match_cpu(backend, cpu, fill):
    rng = np.random.default_rng(secrets.randbits(32))
    x = fr_to_array(fill(64, rng))
    for op in OPS:
        assert np.array_equal(backend.to_host(getattr(backend, op)(x)), getattr(cpu, op)(x)), op


def test_non_canonical_inputs_are_reduced(backend, cpu):
    vals = [R, R + 7, (1 << 256) - 1, 2 * R + 1] * 4
    raw = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in vals), dtype="<u8")
    raw = raw.reshape(-1, 4).copy()
    for op in OPS:
        assert np.array_equal(backend.to_host(getattr(backend, op)(raw)), getattr(cpu, op)(raw))


def test_device_arrays_in_and_out(backend, cpu):
    x = fr_random(256, np.random.default_rng(secrets.randbits(32)))
    import cupy

    y = backend.ntt(backend.asarray(x))
    assert isinstance(y, cupy.ndarray)
    back = backend.intt(y)  # a device array straight back in
    assert np.array_equal(backend.to_host(back), x)
    assert backend.to_host(back).dtype == np.uint64


def test_rejects_bad_shapes(backend):
    with pytest.raises(ValueError, match="power of two"):
        backend.ntt(fr_random(12, np.random.default_rng(0)))
    with pytest.raises(ValueError):
        backend.ntt(np.zeros((8, 3), dtype=np.uint64))


@pytest.mark.gpu
def test_large_transform_identities(backend, target):
    if target != "gpu":
        pytest.skip("large sizes run on the GPU only")
    from cuzk.backends.cuda.ntt import NttEngine

    seed = secrets.randbits(32)
    k = 20
    n = 1 << k
    fr = backend.fr
    x, y = fr.random(n, seed), fr.random(n, seed + 1)
    X = backend.ntt(x)
    assert np.array_equal(to_numpy(backend.intt(X)), to_numpy(x))
    assert np.array_equal(to_numpy(backend.coset_intt(backend.coset_ntt(x))), to_numpy(x))
    # Linearity: ntt(3x + y) = 3 ntt(x) + ntt(y).
    lhs = backend.ntt(fr.add(fr.scale(x, 3), y))
    rhs = fr.add(fr.scale(X, 3), backend.ntt(y))
    assert np.array_equal(to_numpy(lhs), to_numpy(rhs))
    # Direct evaluation at a few frequencies, with Python integers.
    xs = fr_from_array(to_numpy(x))
    omega = EvaluationDomain(k).omega
    got = fr_from_array(to_numpy(X))
    for j in (1, secrets.randbelow(n)):
        w = pow(omega, j, R)
        acc, p = 0, 1
        for v in xs:
            acc += v * p
            p = p * w % R
        assert got[j] == acc % R, f"frequency {j}, seed {seed}"
    # Full and split twiddle tables give the same bits, across three passes.
    z = fr.random(1 << 21, seed + 2)
    a = NttEngine(backend.ctx, full_tables=True).ntt(z)
    b = NttEngine(backend.ctx, full_tables=False).ntt(z)
    assert np.array_equal(to_numpy(a), to_numpy(b))
