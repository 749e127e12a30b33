"""sppark's Pippenger MSM beside ours, on the same device-resident inputs.

The comparison library is built from sppark's public source outside this
repository (it is never committed) and loaded by path, e.g. ``python3 -m
cuzk.bench.msm --explore --sppark .sppark/libsppark_msm.so``. Its C ABI:

    int sppark_msm_g1(const void* points, const void* scalars, size_t n,
                      uint64_t* out, float* ms, int reps);   // and sppark_msm_g2

``points``: the device address of n affine points in Montgomery form (R =
2^384, the layout of :class:`PreparedBases`' resident words: x then y, G2's
coordinates c0 then c1); ``scalars``: the device address of n canonical
scalars (4 little-endian uint64 each); ``out``: the affine result in Montgomery
form (12 or 24 uint64, all zero for infinity); ``ms``: each repetition's wall
time after one untimed warm-up. A nonzero return is an error.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.algebra.arrays import g1_from_array, g2_from_array
from cuzk.algebra.curves import Affine
from cuzk.formats.points import g1_from_lem, g2_from_lem


class SpparkError(RuntimeError):
    pass


def _to_affine(out: np.ndarray, group: str) -> Affine:
    """The library's result: snarkjs's point layout (Montgomery, little-endian,
    all zero for infinity), so its decoder reads it."""
    from_lem, from_array = (
        (g1_from_lem, g1_from_array) if group == "G1" else (g2_from_lem, g2_from_array)
    )
    decoded = from_lem(out.view(np.uint8))
    if decoded.problem is not None:
        raise SpparkError(f"{group} result: {decoded.problem.problem}")
    return from_array(decoded.array)[0]


class SpparkMsm:
    """The comparison library, loaded from ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SpparkError(f"{self.path}: no such library (build it first)")
        self._lib = ctypes.CDLL(str(self.path))
        for name in ("sppark_msm_g1", "sppark_msm_g2"):
            fn = getattr(self._lib, name)
            fn.argtypes = [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_int,
            ]
            fn.restype = ctypes.c_int

    def msm(self, group: str, points: Any, scalars: Any, reps: int) -> tuple[list[float], Affine]:
        """Time ``reps`` MSMs over the first len(scalars) points (CuPy arrays);
        each repetition's milliseconds and the result as an affine point."""
        n = int(scalars.shape[0])
        words = 24 if group == "G1" else 48  # 32-bit words a point
        if points.size < n * words:
            raise SpparkError(f"{group}: {points.size // words} points for {n} scalars")
        out = np.zeros(12 if group == "G1" else 24, dtype=np.uint64)
        ms = np.zeros(max(reps, 1), dtype=np.float32)
        fn = self._lib.sppark_msm_g1 if group == "G1" else self._lib.sppark_msm_g2
        rc = fn(points.data.ptr, scalars.data.ptr, n, out.ctypes.data, ms.ctypes.data, reps)
        if rc:
            raise SpparkError(f"{self.path.name}: {group} MSM of {n} returned {rc}")
        return [float(v) for v in ms[:reps]], _to_affine(out, group)
