"""Benchmarks of the Fr, NTT, H-polynomial and sparse kernels (``cuzk-bench kernels``),
and the two ceilings every row is measured against (:func:`measure_ceilings`).

Every figure is the median of ``reps`` timed runs (CUDA events) after a
warm-up, with inputs already on the GPU, and comes with its floor: the larger
of (bytes that must move) / (measured copy bandwidth) and (field products of
the textbook algorithm) / (measured Fr multiply rate). Each section checks its
own results (identities, cross-checks between two code paths, sampled rows
against Python integers) and reports ``check`` in its rows.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends.cuda.fr import FrKernels
from cuzk.bench import timing
from cuzk.bench.inputs import DICT_SIZE, SHAPES, synthetic_csr

log = logging.getLogger(__name__)

# 32GiB PoRep, one partition (FILECOIN.md): constraints, aux variables, inputs.
POREP_ROWS = 130_278_869
POREP_COLS = 130_169_893 + 328


def _free() -> None:
    import cupy

    cupy.cuda.Device().synchronize()
    cupy.get_default_memory_pool().free_all_blocks()


def measure_ceilings(ctx, quick: bool = False) -> dict:
    """Device-to-device copy bandwidth and the Fr multiply rate, measured now."""
    import cupy

    nbytes = (256 << 20) if quick else (4 << 30)
    bufs = [cupy.ones(nbytes // 8, dtype=cupy.uint64), cupy.empty(nbytes // 8, dtype=cupy.uint64)]

    def copy() -> None:
        bufs[1][...] = bufs[0]

    t = statistics.median(timing.time_ms(copy, reps=7))
    bufs.clear()
    _free()
    ceilings: dict[str, Any] = {"copy_bytes_per_s": 2 * nbytes / (t / 1e3)}
    threads = 132 * 8 * 256 if not quick else 4096
    iters = 16 if quick else 256
    k = FrKernels(ctx)
    data = k.random(4 * threads, seed=7)
    muls = 4 * threads * iters
    t = statistics.median(timing.time_ms(lambda: k.mul_rate_launch(data, iters)))
    ceilings["fr_mul_per_s"] = muls / (t / 1e3)
    try:
        props = cupy.cuda.runtime.getDeviceProperties(ctx.device_id)
        ceilings["device"] = (
            props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        )
        ceilings["sm_count"] = int(props["multiProcessorCount"])
    except Exception:  # the host emulation has no device properties
        ceilings["device"] = "unknown"
    log.info("ceilings: %s", ceilings)
    return ceilings


def _row(op: str, size: int, times: list[float], work: float, unit: str, floor_ms: float, **extra):
    med = statistics.median(times)
    scale = 1e9
    return {
        "op": op,
        "size": size,
        "median_ms": round(med, 4),
        "min_ms": round(min(times), 4),
        "rate": round(work / (med / 1e3) / scale, 3),
        "unit": unit,
        "floor_ms": round(floor_ms, 4),
        "ratio_to_floor": round(med / floor_ms, 3) if floor_ms > 0 else None,
        **extra,
    }


_FULL = {"tables": "full"}  # rows of NTT engines with full power tables


def _ntt_floor(n: int, ceilings: dict, transforms: int = 1, extra_bytes: float = 0) -> tuple:
    """Radix-2 products (n/2·log n per transform) and one read + write per transform."""
    log_n = n.bit_length() - 1
    muls = transforms * n / 2 * log_n
    bytes_ = transforms * 64 * n + extra_bytes
    floor = max(muls / ceilings["fr_mul_per_s"], bytes_ / ceilings["copy_bytes_per_s"]) * 1e3
    return muls, floor


def _equal(cp, a, b) -> bool:
    return bool(cp.array_equal(a, b))


def ntt_rows(ctx, ceilings: dict, quick: bool) -> list[dict]:
    import cupy as cp

    from cuzk.backends.cuda.ntt import NttEngine

    rows = []
    fr = FrKernels(ctx)
    sizes = [10, 14] if quick else [16, 20, 24, 27]
    for full in (True, False):
        eng = NttEngine(ctx, full_tables=full)
        tables = "full" if full else "split"
        for k in sizes:
            n = 1 << k
            x = fr.random(n, seed=k)
            y = eng.ntt(x)
            check = _equal(cp, eng.intt(y), x)
            del y
            muls, floor = _ntt_floor(n, ceilings)
            t = timing.time_ms(lambda eng=eng, x=x: eng.ntt(x))
            rows.append(_row("ntt", n, t, muls, "Gmul/s", floor, tables=tables, check=check))
            buf = x.copy()
            t = timing.time_ms(lambda eng=eng, buf=buf: eng.dit(buf, inverse=False))
            rows.append(_row("ntt_inplace", n, t, muls, "Gmul/s", floor, tables=tables))
            if k == sizes[-2]:
                for op in ("intt", "coset_ntt", "coset_intt"):
                    fn = getattr(eng, op)
                    t = timing.time_ms(lambda fn=fn, x=x: fn(x))
                    rows.append(_row(op, n, t, muls, "Gmul/s", floor, tables=tables))
            del x, buf
            _free()
        eng.release_tables()
        _free()
    # Another block size than the default (2^10 elements: two tiles of 2^9);
    # 2^9 was measured worse (v3: 5.89 / 50.8 ms) and is not repeated.
    for k in sizes[-2:]:
        n = 1 << k
        x = fr.random(n, seed=k)
        muls, floor = _ntt_floor(n, ceilings)
        eng = NttEngine(ctx, full_tables=True, block_bits=11)
        y = eng.ntt(x)
        check = _equal(cp, eng.intt(y), x)
        t = timing.time_ms(lambda eng=eng, x=x: eng.ntt(x))
        rows.append(
            _row("ntt", n, t, muls, "Gmul/s", floor, **_FULL, build="block_bits=11", check=check)
        )
        eng.release_tables()
        del x, y
        _free()
    return rows


def hpoly_rows(ctx, ceilings: dict, quick: bool) -> list[dict]:
    import cupy as cp

    from cuzk.backends.cuda.hpoly import HPoly
    from cuzk.backends.cuda.ntt import NttEngine

    rows = []
    fr = FrKernels(ctx)
    sizes = [10, 12] if quick else [20, 24, 27]
    results = {}
    for full in (True, False):
        eng = NttEngine(ctx, full_tables=full)
        h = HPoly(eng)
        for k in sizes:
            n = 1 << k
            a, b, c = fr.random(n, 1), fr.random(n, 2), fr.random(n, 3)
            out = h(a, b, c)
            check = None
            if k in results:
                check = _equal(cp, out, results[k])  # full vs split tables
            else:
                results[k] = out
                if k != sizes[-1] or quick:
                    check = _equal(cp, out, _h_by_transforms(eng, fr, a, b, c))
            muls, floor = _ntt_floor(n, ceilings, transforms=6, extra_bytes=32 * n * 4)
            t = timing.time_ms(lambda h=h, a=a, b=b, c=c: h(a, b, c))
            rows.append(
                _row(
                    "h_poly",
                    n,
                    t,
                    muls,
                    "Gmul/s",
                    floor,
                    tables="full" if full else "split",
                    check=check,
                )
            )
            del a, b, c, out
            _free()
        eng.release_tables()
        _free()
    return rows


def _h_by_transforms(eng, fr: FrKernels, a, b, c):
    """H through the backend's separate transforms: an independent code path."""
    n = len(a)
    d = EvaluationDomain.for_size(n)
    ea = eng.coset_ntt(eng.intt(a))
    eb = eng.coset_ntt(eng.intt(b))
    ec = eng.coset_ntt(eng.intt(c))
    t = fr.scale(fr.sub(fr.mul(ea, eb), ec), d.z_on_coset_inv)
    return eng.coset_intt(t)[: n - 1]


def fr_rows(ctx, ceilings: dict, quick: bool) -> list[dict]:
    fr = FrKernels(ctx)
    n = 1 << (16 if quick else 26)
    a, b = fr.random(n, 5), fr.random(n, 6)
    t = timing.time_ms(lambda: fr.mul(a, b))
    bytes_ = 96 * n
    floor = max(bytes_ / ceilings["copy_bytes_per_s"], 2 * n / ceilings["fr_mul_per_s"]) * 1e3
    return [_row("fr_mul_elementwise", n, t, bytes_, "GB/s", floor)]


def _check_rows(dev, orig, dict_std: np.ndarray, w, out, samples: int, seed: int) -> bool:
    """Sampled rows recomputed with Python integers from the unsplit arrays."""
    import cupy as cp

    row_ptr, all_cols, all_codes = orig
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, dev.num_rows, samples)
    # Always include a long row when there is one.
    if len(dev.long_rows):
        rows[0] = int(dev.long_rows[0])
    dvals = fr_from_array(dict_std)
    ptr = cp.asnumpy(row_ptr)
    for r in rows:
        s, e = int(ptr[r]), int(ptr[r + 1])
        cols = cp.asnumpy(all_cols[s:e]).astype(np.int64)
        codes = cp.asnumpy(all_codes[s:e])
        wv = fr_from_array(cp.asnumpy(w[cp.asarray(cols)])) if e > s else []
        want = sum(dvals[int(c)] * x for c, x in zip(codes, wv, strict=True)) % R
        got = fr_from_array(cp.asnumpy(out[int(r) : int(r) + 1]))[0]
        if got != want:
            log.error("spmv row %d: got %x, want %x", r, got, want)
            return False
    return True


def spmv_rows(ctx, ceilings: dict, quick: bool) -> list[dict]:
    """Each matrix by both kernels (warp: v5, seg: segmented reduction), one
    after the other; the seg kernel's output must equal the warp kernel's."""
    import cupy as cp

    from cuzk.backends.cuda.spmv import KERNELS, SpmvEngine

    fr = FrKernels(ctx)
    engines = {k: SpmvEngine(ctx, fr, kernel=k) for k in KERNELS}
    rows = []
    sizes = (
        [(1 << 12, (1 << 12) + 9)]
        if quick
        else [(1 << 20, (1 << 20) + 9), (POREP_ROWS, POREP_COLS)]
    )
    for nrows, ncols in sizes:
        w = fr.random(ncols, seed=11)
        total_t = {k: 0.0 for k in KERNELS}
        total_bytes = 0.0
        total_floor = 0.0
        ok = {k: True for k in KERNELS}
        for i, (name, shape) in enumerate(SHAPES.items()):
            dev, dict_std, orig = synthetic_csr(
                engines["warp"], fr, shape, nrows, ncols, seed=100 + i
            )
            # Two row-pointer arrays (ones, others), a column per entry, a code
            # per entry that has a coefficient other than 1, w once, the output.
            ones = len(dev.one_cols)
            bytes_ = (
                16 * (nrows + 1) + 4 * dev.nnz + 2 * (dev.nnz - ones) + 32 * (ncols + nrows)
            ) + 32 * DICT_SIZE
            nonone = dev.nnz - ones
            floor = (
                max(bytes_ / ceilings["copy_bytes_per_s"], nonone / ceilings["fr_mul_per_s"]) * 1e3
            )
            ref = None
            for kernel, eng in engines.items():
                out = eng.matvec(dev, w)
                if ref is None:
                    check = _check_rows(dev, orig, dict_std, w, out, 64 if quick else 256, seed=i)
                    ref = out
                else:
                    check = _equal(cp, out, ref)
                del out
                ok[kernel] = ok[kernel] and check
                t = timing.time_ms(lambda eng=eng, dev=dev, w=w: eng.matvec(dev, w))
                rows.append(
                    _row(
                        f"spmv_{name}",
                        nrows,
                        t,
                        bytes_,
                        "GB/s",
                        floor,
                        build=f"kernel={kernel}",
                        check=check,
                        nnz=dev.nnz,
                    )
                )
                total_t[kernel] += statistics.median(t)
            total_bytes += bytes_
            total_floor += floor
            dev.release()
            del dev, orig, ref
            _free()
        for kernel in KERNELS:
            rows.append(
                _row(
                    "spmv_ABC",
                    nrows,
                    [total_t[kernel]],
                    total_bytes,
                    "GB/s",
                    total_floor,
                    build=f"kernel={kernel}",
                    check=ok[kernel],
                    copy_fraction=round(
                        total_bytes / (total_t[kernel] / 1e3) / ceilings["copy_bytes_per_s"], 3
                    ),
                )
            )
        del w
        _free()
    return rows


SECTIONS = {"fr": fr_rows, "ntt": ntt_rows, "h_poly": hpoly_rows, "spmv": spmv_rows}


def rows(ctx, ceilings: dict, quick: bool, sections: list[str] | None = None) -> list[dict]:
    """All rows of this family; a failing section becomes one row with its error."""
    out: list[dict] = []
    for name, fn in SECTIONS.items():
        if sections and name not in sections:
            continue
        log.info("section %s", name)
        try:
            out.extend(fn(ctx, ceilings, quick))
        except Exception as e:  # keep the other sections' figures
            log.exception("section %s failed", name)
            out.append({"op": name, "error": f"{type(e).__name__}: {e}"})
        _free()
    return out
