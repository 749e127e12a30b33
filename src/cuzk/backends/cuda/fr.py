"""Fr on the GPU: host-side constants and the element-wise kernels of ``fr_ops.cu``.

Device Fr arrays are CuPy ``(n, 4)`` uint64 arrays in standard form. Kernels
multiply in Montgomery form (R = 2^256), so constants handed to them are
converted here, on the host, with :func:`mont_limbs`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R

MONT_R = (1 << 256) % R
THREADS = 256
KERNEL_MODULE = "fr_ops.cu"  # cuzk.backends.cuda.kernels lists what the backend loads
# Enough blocks to fill an H200 (132 SMs) many times over; kernels grid-stride.
MAX_BLOCKS = 132 * 64


def mont(x: int) -> int:
    """x·R mod r: a standard value's Montgomery form."""
    return x % R * MONT_R % R


def mont_limbs(values: Iterable[int]) -> np.ndarray:
    """(n, 4) uint64 limbs of the Montgomery forms of ``values``."""
    return fr_to_array(mont(v) for v in values)


def grid_for(n: int, threads: int = THREADS) -> tuple[int]:
    return (max(1, min((n + threads - 1) // threads, MAX_BLOCKS)),)


def check_fr_shape(a: Any, what: str = "Fr array") -> None:
    if a.ndim != 2 or a.shape[1] != 4 or a.dtype != np.uint64:
        raise ValueError(f"{what}: expected an (n, 4) uint64 array, got {a.shape} {a.dtype}")


def fr_rows(a: Any, what: str = "Fr array") -> int:
    """The length of an Fr array (host or device), checking its shape only."""
    shape = getattr(a, "shape", None)
    if shape is None or len(shape) != 2 or shape[1] != 4:
        raise ValueError(f"{what}: expected an (n, 4) uint64 array")
    return int(shape[0])


@contextmanager
def staged(ctx, what: str, arrays: list, out_bytes: int) -> Iterator[list]:
    """Reserve an operation's peak (outputs plus the uploads of host inputs),
    then upload: a reservation that does not fit fails before any allocation."""
    import cupy

    arrays = [a if hasattr(a, "shape") else np.asarray(a) for a in arrays]
    upload = sum(32 * fr_rows(a, what) for a in arrays if not isinstance(a, cupy.ndarray))
    with ctx.budget.reserve(out_bytes + upload, what):
        yield [cupy.ascontiguousarray(cupy.asarray(a, dtype=cupy.uint64)) for a in arrays]


class FrKernels:
    """The element-wise kernels (``fr_ops.cu``), with ``fr.cuh``'s multiplication
    (the folded one, measured fastest: docs/device-notes/ntt.md#fr-product)."""

    def __init__(self, ctx) -> None:
        import cupy

        self.cp = cupy
        self.ctx = ctx
        self.module = ctx.module(KERNEL_MODULE)
        self._fn = {}

    def fn(self, name: str):
        if name not in self._fn:
            self._fn[name] = self.module.get_function(name)
        return self._fn[name]

    def _binary(self, name: str, a, b):
        cp = self.cp
        a, b = cp.ascontiguousarray(cp.asarray(a)), cp.ascontiguousarray(cp.asarray(b))
        check_fr_shape(a)
        check_fr_shape(b)
        if a.shape != b.shape:
            raise ValueError(f"Fr arrays of different lengths: {len(a)} and {len(b)}")
        out = cp.empty_like(a)
        n = len(a)
        if n:
            self.fn(name)(grid_for(n), (THREADS,), (out, a, b, np.uint64(n)))
        return out

    def _unary(self, name: str, a):
        cp = self.cp
        a = cp.ascontiguousarray(cp.asarray(a))
        check_fr_shape(a)
        out = cp.empty_like(a)
        n = len(a)
        if n:
            self.fn(name)(grid_for(n), (THREADS,), (out, a, np.uint64(n)))
        return out

    def add(self, a, b):
        return self._binary("fr_add_kernel", a, b)

    def sub(self, a, b):
        return self._binary("fr_sub_kernel", a, b)

    def mul(self, a, b):
        """The field product (standard form in and out)."""
        return self._binary("fr_mul_kernel", a, b)

    def mont_mul(self, a, b):
        """The raw Montgomery product a·b/R."""
        return self._binary("fr_mont_mul_kernel", a, b)

    def scale(self, a, c: int):
        """a·c for one field constant c."""
        cp = self.cp
        a = cp.ascontiguousarray(cp.asarray(a))
        check_fr_shape(a)
        cm = cp.asarray(mont_limbs([c]))
        out = cp.empty_like(a)
        if len(a):
            self.fn("fr_scale_kernel")(
                grid_for(len(a)), (THREADS,), (out, a, cm, np.uint64(len(a)))
            )
        return out

    def reduce(self, a):
        return self._unary("fr_reduce_kernel", a)

    def to_mont(self, a):
        return self._unary("fr_to_mont_kernel", a)

    def from_mont(self, a):
        return self._unary("fr_from_mont_kernel", a)

    def inverse(self, a):
        """Element-wise inverses (0 stays 0), Montgomery's trick per thread."""
        cp = self.cp
        a = cp.ascontiguousarray(cp.asarray(a))
        check_fr_shape(a)
        out = cp.empty_like(a)
        n = len(a)
        if n:
            # One exponentiation (~400 products) per thread: give each thread
            # at least 64 elements once the array is large.
            threads = max(1, min(n, max(n // 64, 132 * THREADS)))
            blocks = (threads + THREADS - 1) // THREADS
            self.fn("fr_batch_inverse_kernel")((blocks,), (THREADS,), (out, a, np.uint64(n)))
        return out

    def random(self, n: int, seed: int):
        """n pseudo-random canonical values (below 2^254), for benchmarks."""
        cp = self.cp
        out = cp.empty((n, 4), dtype=cp.uint64)
        if n:
            self.fn("fr_random_kernel")(
                grid_for(n), (THREADS,), (out, np.uint64(n), np.uint64(seed & (2**64 - 1)))
            )
        return out

    def mul_rate_launch(self, data, iters: int) -> int:
        """One launch of the multiply-rate probe; returns the products it does."""
        n = len(data)
        threads = n // 4
        blocks = (threads + THREADS - 1) // THREADS
        self.fn("fr_mul_rate_kernel")((blocks,), (THREADS,), (data, np.uint64(n), np.uint32(iters)))
        return threads * 4 * iters
