"""Fixed-base multiplication (parameter generation): sᵢ·P for one point P and many sᵢ.

A table of d·2^(wbits·w)·P for every window w and digit d (:func:`fixed_base_table`)
turns each product into one addition per window (kernel ``fixed_base_mul``);
the products come back in affine form (kernel ``batch_to_affine``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.backends.cuda.msm.bases import to_montgomery
from cuzk.backends.cuda.msm.pipeline import Kernels, _check_scalars
from cuzk.backends.cuda.msm.spec import _U32, G1_SPEC, SCALAR_BITS, CurveSpec

if TYPE_CHECKING:
    from cuzk.backends.cuda.msm.engine import MsmEngine

FIXED_BASE_WINDOW = 10
_AFFINE_PER_THREAD = 16  # points sharing one inversion in batch_to_affine


def fixed_base_windows(wbits: int = FIXED_BASE_WINDOW) -> int:
    return -(-SCALAR_BITS // wbits)


def fixed_base_table(point: Affine, spec: CurveSpec, wbits: int = FIXED_BASE_WINDOW) -> np.ndarray:
    """d·2^(wbits·w)·P for every window w and digit d ≥ 1, affine in standard form,
    as the flat uint32 words fixed_base_mul reads (computed with arkworks)."""
    from cuzk.algebra import pairing

    base = pairing.g1_to_ark(point) if spec is G1_SPEC else pairing.g2_to_ark(point)
    rows = []
    for _ in range(fixed_base_windows(wbits)):
        acc = base
        for _d in range((1 << wbits) - 1):
            rows.append(acc.to_xy_bytes_le())
            acc = acc + base
        base = acc  # 2^wbits times the window's base
    return np.frombuffer(b"".join(rows), dtype="<u4").copy()


def fixed_base_affine(
    xp, k: Kernels, spec: CurveSpec, table, scalars, wbits: int = FIXED_BASE_WINDOW
):
    """sᵢ·P for every scalar, as flat uint32 affine words in standard form (zeros =
    infinity): the (n, 2, 6) / (n, 2, 2, 6) layout of cuzk.algebra.arrays."""
    n = int(scalars.shape[0])
    xyzz = xp.empty(n * spec.xyzz_words, dtype=_U32)
    k.launch(
        "fixed_base_mul",
        n,
        (table, _U32(wbits), _U32(fixed_base_windows(wbits)), scalars, _U32(n), xyzz),
    )
    scratch = xp.empty(n * spec.field_words, dtype=_U32)
    out = xp.empty(n * spec.affine_words, dtype=_U32)
    threads = -(-n // _AFFINE_PER_THREAD)
    k.launch("batch_to_affine", threads, (xyzz, _U32(n), _U32(_AFFINE_PER_THREAD), scratch, out))
    return out


def fixed_base_multiples(engine: MsmEngine, spec: CurveSpec, point: Affine, scalars, to_host: bool):
    """sᵢ·P for every scalar on the engine's device, in chunks (the engine keeps
    the table of the last point it was given)."""
    import cupy

    _check_scalars(scalars, scalars.shape[0], spec)
    n = int(scalars.shape[0])
    shape = (n, 2, 6) if spec is G1_SPEC else (n, 2, 2, 6)
    key = (spec.name, repr(point))
    k = engine.kernels(spec)
    out = np.empty(shape, dtype=np.uint64) if to_host else cupy.empty(shape, dtype=np.uint64)
    if n == 0:
        return out
    # Chunks bound the XYZZ intermediates; each costs ~2.3x its affine output.
    chunk = max(1, min(n, 1 << 22))
    per_point = 32 + spec.xyzz_bytes + 4 * spec.field_words + spec.affine_bytes
    with cupy.cuda.Device(engine.ctx.device_id):
        table = engine.fixed_base_tables.get(key)
        if table is None:
            table = cupy.asarray(fixed_base_table(point, spec))
            to_montgomery(k, spec, table, len(table) // spec.affine_words)
            engine.fixed_base_tables = {key: table}  # one table at a time: they are 2.5-5 MiB
        flat = out.reshape(n, -1).view(_U32)
        with engine.ctx.budget.reserve(chunk * per_point, f"fixed-base {spec.name}"):
            for lo in range(0, n, chunk):
                hi = min(n, lo + chunk)
                part = scalars[lo:hi]
                s = (
                    cupy.asarray(np.ascontiguousarray(part))
                    if isinstance(part, np.ndarray)
                    else part
                )
                words = fixed_base_affine(cupy, k, spec, table, s)
                if to_host:
                    flat[lo:hi] = words.reshape(hi - lo, -1).get()
                else:
                    flat[lo:hi] = words.reshape(hi - lo, -1)
    return out
