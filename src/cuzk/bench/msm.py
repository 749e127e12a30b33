"""MSM benchmark rows for ``cuzk-bench kernels``, and a stand-alone device check.

:func:`rows` times, on one device:

- the Montgomery product of Fq (PTX carry chains over 32-bit limbs), against
  the ceiling of products per second;
- G1 and G2 MSMs over random scalars, bases resident, inputs on the GPU;
- the 0/1 path (half the scalars 1, half 0);
- fixed-base multiplication (parameter generation), points per second.

Benchmark bases are k·G for random k, made on the GPU by the fixed-base
kernels (arkworks on the host would take minutes at 2^24).

Floors come from the measured ceilings (``ceilings`` keys, with the DESIGN.md
figures as defaults): ``fq_mul_per_s`` (12-limb Montgomery products per
second) and ``copy_bytes_per_s`` (device copy, bytes read + written). An MSM's
floor is its bucket additions at 6 products each, the cheapest known
addition (batched affine); the 0/1 path's is the larger of that and reading
its bases once.

``python3 -m cuzk.bench.msm [--quick] [--check] [--json PATH]``
runs the same rows (plus, with --check, bit-exact checks against the CPU
backend on fresh random inputs) and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from typing import Any

import numpy as np

from cuzk.bench import timing
from cuzk.bench.inputs import make_bases, random_scalars_device

log = logging.getLogger(__name__)

DEFAULT_CEILINGS = {"fq_mul_per_s": 17.4e9, "copy_bytes_per_s": 4.3e12}
_FQ2_MUL_COST = 3  # Fq products per Fq2 product (Karatsuba)
_AFFINE_ADD_PRODUCTS = 6


def _ceiling(ceilings: dict, key: str) -> float:
    return float(ceilings.get(key) or DEFAULT_CEILINGS[key])


def _median_ms(fn, reps: int) -> float:
    return statistics.median(timing.time_ms(fn, reps=reps))


def _additions(n_full: int, spec) -> float:
    from cuzk.backends.cuda.msm import SCALAR_BITS, choose_window

    c = choose_window(n_full, spec)
    return n_full * SCALAR_BITS / c


def _row(op: str, size: int, ms: float, rate: float, unit: str, floor_ms: float) -> dict:
    return {
        "op": op,
        "size": size,
        "median_ms": round(ms, 3),
        "rate": round(rate, 3),
        "unit": unit,
        "floor_ms": round(floor_ms, 3),
        "ratio_to_floor": round(ms / floor_ms, 2) if floor_ms > 0 else None,
    }


def fq_mul_rows(ctx, ceilings: dict) -> list[dict]:
    """Dependent-chain Montgomery products per second (fq.cuh's product)."""
    import cupy

    from cuzk.backends.cuda.msm import _CupyKernels
    from cuzk.backends.cuda.msm.spec import ARITH_MODULE

    n, iters = 1 << 20, 256
    mul_rate = _ceiling(ceilings, "fq_mul_per_s")
    k = _CupyKernels(ctx.module(*ARITH_MODULE))
    data = cupy.asarray(np.random.default_rng(1).integers(0, 1 << 29, n * 12, dtype=np.uint32))
    ms = _median_ms(
        lambda: k.launch("fq_mul_chain", n, (data, np.uint32(n), np.uint32(iters)), block=256),
        reps=5,
    )
    muls = n * iters
    return [_row("fq_mul_ptx32", muls, ms, muls / ms / 1e6, "G mul/s", muls / mul_rate * 1e3)]


# Version 1 of the pipeline: XYZZ bucket accumulation, every window sorted at
# once (one group when the windows fit 16 GiB); timed beside the default
# (version 2) at the sizes of the performance goals. Its final defaults:
# docs/device-notes/msm.md#sort-and-accumulation.
V1_TUNING = {"method": "xyzz"}
# Sizes (log2) of the rows; module constants so a dry run on the CPU twin can
# shrink them (tests/bench/test_bench_msm.py).
MSM_LOGS = {"G1": [16, 18, 20, 22, 24, 26], "G2": [16, 18, 20, 22, 24]}
MSM_LOGS_QUICK = {"G1": [16, 18, 20, 22], "G2": [16, 18, 20]}
COMPARE = {"G1": (24, 26), "G2": (24,)}
COMPARE_QUICK = {"G1": (22,), "G2": (20,)}
ZERO_ONE_LOG = 27
STREAMED_LOG = 24
FIXED_BASE_LOGS = (20, 22)  # quick, full
CHECK_CASES = (("G1", 1 << 16), ("G2", 1 << 13), ("G1", 100_003))
CHECK_SPLIT_LOG = 22


def _v1_engine(ctx):
    from cuzk.backends.cuda.msm import MsmEngine, Tuning

    return MsmEngine(ctx, Tuning(**V1_TUNING))


def _timed_variants(variants, handle, scalars, reps: int, make_row) -> list[dict]:
    """Time each (name, engine) on the same inputs; phases of one more run each,
    whose results must agree (the bit-exact old-vs-new check)."""
    from cuzk.backends.cuda import memory
    from cuzk.backends.cuda.msm import xyzz_to_affine

    out, results = [], []
    for name, eng in variants:
        releases = memory.pool_releases
        # the library's own entry point (CudaBackend.msm_g1 runs it too), planned by it
        ms = _median_ms(lambda e=eng: e.msm_xyzz(handle, scalars), reps=reps)
        row = make_row(ms)
        row["variant"] = name
        plan = getattr(eng, "last_plan", None)
        row["plan"] = plan.brief() if plan is not None else None
        # times the pool gave back its cached blocks at its limit during the
        # runs (each a device synchronisation and cudaFree): 0 when it is steady
        row["pool_releases"] = memory.pool_releases - releases
        if len(variants) > 1:
            timings: dict[str, float] = {}
            words = eng.msm_xyzz(handle, scalars, timings=timings)
            row["phases"] = {k: round(v, 3) for k, v in timings.items()}
            results.append(xyzz_to_affine(words.get(), handle.spec))
        out.append(row)
        log.info("%s", row)
    if len(results) > 1:
        same = all(r == results[0] for r in results)
        for row in out:
            row["check"] = same
    return out


def msm_rows(ctx, ceilings: dict, quick: bool, engine=None) -> list[dict]:
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, MsmEngine

    engine = engine or MsmEngine(ctx)
    old = _v1_engine(ctx)
    mul_rate = _ceiling(ceilings, "fq_mul_per_s")
    out = []
    plans = MSM_LOGS_QUICK if quick else MSM_LOGS
    compare = COMPARE_QUICK if quick else COMPARE
    for group, logs in plans.items():
        spec = G1_SPEC if group == "G1" else G2_SPEC
        mul_cost = 1 if group == "G1" else _FQ2_MUL_COST
        top = 1 << max(logs)
        bases = make_bases(engine, group, top, seed=7)
        t0 = time.perf_counter()
        handle = engine.prepare_g1(bases) if group == "G1" else engine.prepare_g2(bases)
        del bases
        log.info("%s: %d bases made and prepared in %.1f s", group, top, time.perf_counter() - t0)
        for lg in logs:
            n = 1 << lg
            scalars = random_scalars_device(n, seed=lg)
            floor = _additions(n, spec) * _AFFINE_ADD_PRODUCTS * mul_cost / mul_rate * 1e3
            op = f"msm_{group.lower()}"
            variants = [("v2", engine)] + ([("v1", old)] if lg in compare[group] else [])
            out += _timed_variants(
                variants,
                handle,
                scalars,
                3 if lg >= 24 else 5,
                lambda ms, n=n, floor=floor, op=op: _row(
                    op, n, ms, ms * 1e6 / n, "ns/point", floor
                ),
            )
        if group == "G1":
            out += _zero_one_rows(engine, old, handle, top, ceilings)
        handle.close()
    if not quick:
        out += _streamed_rows(ctx, STREAMED_LOG)
        big = make_bases(engine, "G1", 1 << ZERO_ONE_LOG, seed=8)
        handle = engine.prepare_g1(big)
        del big
        out += _zero_one_rows(engine, old, handle, 1 << ZERO_ONE_LOG, ceilings)
        handle.close()
    return out


def _streamed_rows(ctx, lg: int) -> list[dict]:
    """G1 MSM with the bases streamed from pinned host memory in 2^(lg-2) chunks."""
    from cuzk.backends.cuda.msm import MsmEngine

    n = 1 << lg
    streamed = MsmEngine(ctx, stream_chunk=n // 4)
    bases = make_bases(streamed, "G1", n, seed=13).get()
    handle = streamed.prepare_g1(bases)
    del bases
    scalars = random_scalars_device(n, seed=14)
    ms = _median_ms(lambda: streamed.msm_xyzz(handle, scalars), reps=3)
    handle.close()
    upload_ms = n * 96 / 25e9 * 1e3  # PCIe Gen5 x16, ~25 GB/s achievable
    return [_row("msm_g1_streamed", n, ms, ms * 1e6 / n, "ns/point", upload_ms)]


def _zero_one_rows(engine, old, handle, n: int, ceilings: dict) -> list[dict]:
    """Half the scalars 1, half 0: the bitmap path alone, version 2 and 1."""
    import cupy

    bits = cupy.random.RandomState(3).randint(0, 2, size=n, dtype=np.int64).astype(cupy.uint64)
    scalars = cupy.zeros((n, 4), dtype=cupy.uint64)
    scalars[:, 0] = bits
    ones = n // 2
    floor = max(
        ones * _AFFINE_ADD_PRODUCTS / _ceiling(ceilings, "fq_mul_per_s"),
        (ones * 96 + n * 32) / (_ceiling(ceilings, "copy_bytes_per_s") / 2),
    )
    return _timed_variants(
        [("v2", engine), ("v1", old)],
        handle,
        scalars,
        5,
        lambda ms: _row("msm_g1_zero_one", n, ms, ms * 1e6 / n, "ns/point", floor * 1e3),
    )


def fixed_base_rows(ctx, ceilings: dict, quick: bool, engine=None) -> list[dict]:
    from cuzk.algebra.curves import G1, G2
    from cuzk.backends.cuda.msm import MsmEngine, fixed_base_windows

    engine = engine or MsmEngine(ctx)
    mul_rate = _ceiling(ceilings, "fq_mul_per_s")
    out = []
    n = 1 << FIXED_BASE_LOGS[0 if quick else 1]
    for group, point, fb, cost in (
        ("G1", G1.generator, engine.fixed_base_g1, 1),
        ("G2", G2.generator, engine.fixed_base_g2, _FQ2_MUL_COST),
    ):
        scalars = random_scalars_device(n, seed=11)
        ms = _median_ms(lambda fb=fb, point=point, s=scalars: fb(point, s, to_host=False), reps=3)
        floor = n * fixed_base_windows() * _AFFINE_ADD_PRODUCTS * cost / mul_rate * 1e3
        out.append(_row(f"fixed_base_{group.lower()}", n, ms, n / ms / 1e3, "M points/s", floor))
    return out


def explore_rows(ctx, sppark=None, logs=(24, 26, 27, 24)) -> tuple[list[dict], dict]:
    """Variants of the default MSM at G1 2^24 / 2^26 / 2^27 and G2 2^24
    (``logs``), with phases: the default's sort (``Tuning.sort_points``
    chosen by :func:`cuzk.backends.cuda.msm.choose_sort`: the points' where
    they win) against the index sort ("index", the one a partition's
    reservation holds); and sppark's MSM on the same bases and scalars when
    ``sppark`` (a :class:`cuzk.bench.sppark.SpparkMsm`) is given.

    Every variant runs on the same inputs; the rows' "check" says whether all
    results (sppark's among them) are the same point.
    """
    from cuzk.backends.cuda.msm import MsmEngine, Tuning

    def eng(**kw) -> MsmEngine:
        return MsmEngine(ctx, Tuning(**kw))

    small, big, huge, g2 = logs

    def variants(group: str) -> dict:
        return {"v2": eng(), "index": eng(sort_points=False)}

    plans = [
        ("G1", small, variants("G1")),
        ("G1", big, variants("G1")),
        ("G1", huge, variants("G1")),
        ("G2", g2, variants("G2")),
    ]
    base = MsmEngine(ctx)
    out, phases = [], {}
    for group, lg2, variants in plans:
        n = 1 << lg2
        bases = make_bases(base, group, n, seed=5)
        h = base.prepare_g1(bases) if group == "G1" else base.prepare_g2(bases)
        del bases
        scalars = random_scalars_device(n, seed=9)

        def make_row(ms, n=n, group=group):
            return _row(f"msm_{group.lower()}", n, ms, ms * 1e6 / n, "ns/point", 0.0)

        rows_ = _timed_variants(list(variants.items()), h, scalars, 3, make_row)
        for r in rows_:
            phases[f"{group} 2^{lg2} {r['variant']}"] = r["phases"]
        if sppark is not None:
            rows_.append(_sppark_row(sppark, base, group, h, scalars, make_row))
        out += rows_
        h.close()
    return out, phases


def _sppark_row(sppark, engine, group: str, handle, scalars, make_row) -> dict:
    """sppark's median of 3 on the handle's resident bases; "check": its point
    equals ours."""
    try:
        ms, point = sppark.msm(group, handle.device, scalars, reps=3)
    except Exception as e:  # the comparison must not take the explore rows with it
        log.exception("sppark %s 2^%d", group, scalars.shape[0].bit_length() - 1)
        row = make_row(0.0)
        row.update(variant="sppark", error=str(e), check=False)
        return row
    ours = engine.msm_g1(handle, scalars) if group == "G1" else engine.msm_g2(handle, scalars)
    row = make_row(statistics.median(ms))
    row.update(variant="sppark", runs_ms=[round(v, 3) for v in ms], check=point == ours)
    log.info("%s", row)
    return row


def rows(ctx, ceilings: dict, quick: bool) -> list[dict]:
    """The MSM rows of ``cuzk-bench kernels``."""
    from cuzk.backends.cuda.msm import MsmEngine

    engine = MsmEngine(ctx)
    out = fq_mul_rows(ctx, ceilings)
    out += msm_rows(ctx, ceilings, quick, engine)
    out += fixed_base_rows(ctx, ceilings, quick, engine)
    return out


# --- stand-alone device check -------------------------------------------------------


def warm_modules(jobs: list[tuple[str, tuple[str, ...]]]) -> None:
    """Compile kernel modules in parallel processes, filling the on-disk cache."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(len(jobs)) as pool:
        for (name, extra), secs in zip(jobs, pool.starmap(_compile_one, jobs), strict=True):
            log.info("compiled %s %s in %.1f s", name, " ".join(extra), secs)


def _compile_one(name: str, extra: tuple[str, ...]) -> float:
    from cuzk.backends.cuda.loader import load_module

    t = time.perf_counter()
    mod = load_module(name, extra)
    if hasattr(mod, "compile"):
        mod.compile()
    else:  # older CuPy: the first function lookup compiles
        mod.get_function("to_montgomery" if name == "msm.cu" else "fq_ops")
    return time.perf_counter() - t


def _modules() -> list[tuple[str, tuple[str, ...]]]:
    from cuzk.backends.cuda.msm.spec import ARITH_MODULE, G1_SPEC, G2_SPEC

    return [("msm.cu", G1_SPEC.defines), ("msm.cu", G2_SPEC.defines), ARITH_MODULE]


def check_against_cpu(engine, seed: int) -> list[str]:
    """Bit-exact MSMs against the CPU backend on fresh random inputs, by version 2
    (as configured, and with the affine rounds forced at these small sizes) and
    version 1; failures listed."""
    import cupy

    from cuzk.algebra.arrays import fr_random
    from cuzk.algebra.curves import G1
    from cuzk.backends.cpu import CpuBackend
    from cuzk.backends.cuda.msm import MsmEngine, Tuning

    ctx = engine.ctx
    engines = {
        "v2": engine,
        "v2 affine forced": MsmEngine(ctx, Tuning(affine_min_pairs=256, affine_min_batch=16)),
        "v1": _v1_engine(ctx),
    }
    cpu = CpuBackend()
    rng = np.random.default_rng(seed)
    failures = []
    for group, n in CHECK_CASES:
        bases = make_bases(engine, group, n, seed + n).get()
        scalars = fr_random(n, rng)
        scalars[: n // 4] = 0
        scalars[n // 4 : n // 2] = 0
        scalars[n // 4 : n // 2, 0] = 1
        if group == "G1":
            want = cpu.msm_g1(cpu.prepare_g1(bases), scalars)
        else:
            want = cpu.msm_g2(cpu.prepare_g2(bases), scalars)
        for name, eng in engines.items():
            if group == "G1":
                got = eng.msm_g1(eng.prepare_g1(bases), scalars)
            else:
                got = eng.msm_g2(eng.prepare_g2(bases), scalars)
            status = "ok" if got == want else "MISMATCH"
            log.info("check %s n=%d against CPU, %s: %s", group, n, name, status)
            if got != want:
                failures.append(f"{group} n={n} {name}")
    # Large n: splitting the sum must not change it (different windows, slices),
    # and version 1 must agree.
    n = 1 << CHECK_SPLIT_LOG
    bases = make_bases(engine, "G1", n, seed + 1)
    s = random_scalars_device(n, seed + 2)
    whole = engine.msm_g1(engine.prepare_g1(bases), s)
    lo = engine.msm_g1(engine.prepare_g1(bases[: n // 3]), s[: n // 3])
    hi = engine.msm_g1(engine.prepare_g1(cupy.ascontiguousarray(bases[n // 3 :])), s[n // 3 :])
    v1 = engines["v1"]
    ok = G1.add(lo, hi) == whole == v1.msm_g1(v1.prepare_g1(bases), s)
    log.info("check G1 n=%d split and v1 consistency: %s", n, "ok" if ok else "MISMATCH")
    if not ok:
        failures.append(f"G1 n={n} split / v1")
    return failures


def _table(rows_: list[dict]) -> str:
    lines = [
        f"{'op':<18}{'variant':<16}{'size':>10}{'median ms':>12}{'rate':>12} {'unit':<11}"
        f"{'floor ms':>10}{'x floor':>9} check"
    ]
    for r in rows_:
        check = {None: "", True: "same", False: "DIFFERENT"}[r.get("check")]
        lines.append(
            f"{r['op']:<18}{r.get('variant', ''):<16}{r['size']:>10}{r['median_ms']:>12.3f}"
            f"{r['rate']:>12.3f} {r['unit']:<11}{r['floor_ms']:>10.3f}"
            f"{r['ratio_to_floor'] or 0:>9.2f} {check}"
        )
    return "\n".join(lines)


def profile_one(lg: int) -> int:
    """A warm-up MSM, then the same MSM with the CUDA profiler on; its phases
    (milliseconds) on stdout as JSON."""
    import cupy

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine

    engine = MsmEngine(DeviceContext())
    handle = engine.prepare_g1(make_bases(engine, "G1", 1 << lg, seed=7))
    scalars = random_scalars_device(1 << lg, seed=lg)
    engine.msm_xyzz(handle, scalars)
    cupy.cuda.Device().synchronize()
    phases: dict[str, float] = {}
    cupy.cuda.profiler.start()
    engine.msm_xyzz(handle, scalars, phases)
    cupy.cuda.Device().synchronize()
    cupy.cuda.profiler.stop()
    sys.stdout.write(json.dumps({"log": lg, "phases_ms": phases}) + "\n")
    handle.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--check", action="store_true", help="bit-exact checks against the CPU first")
    p.add_argument("--warm", action="store_true", help="compile the modules in parallel first")
    p.add_argument("--json", help="write the rows here")
    p.add_argument(
        "--explore",
        action="store_true",
        help="build variants of the default MSM (G1 2^24, 2^26, 2^27, G2 2^24)",
    )
    p.add_argument(
        "--sppark",
        metavar="LIB",
        help="with --explore: sppark's MSM from this library beside ours (cuzk.bench.sppark)",
    )
    p.add_argument("--skip-rows", action="store_true", help="no standard rows")
    p.add_argument("--parts", default="fq,msm,fixed", help="standard row groups to run")
    p.add_argument(
        "--profile",
        type=int,
        metavar="LOG",
        help="one G1 MSM of 2^LOG random scalars between the CUDA profiler's start and "
        "stop (after a warm-up run): for `ncu --profile-from-start off`",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    if args.profile is not None:
        return profile_one(args.profile)

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine

    if args.warm:
        t = time.perf_counter()
        warm_modules(_modules())
        log.info("all modules compiled in %.1f s", time.perf_counter() - t)
    ctx = DeviceContext()
    engine = MsmEngine(ctx)
    failures: list[str] = []
    if args.check:
        failures = check_against_cpu(engine, seed=int(time.time()))
    result: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    parts: list = []
    if args.explore:

        def explore() -> list[dict]:
            sp = None
            if args.sppark:
                from cuzk.bench.sppark import SpparkMsm

                sp = SpparkMsm(args.sppark)
            out, extra["phases"] = explore_rows(ctx, sp)
            return out

        parts.append(explore)
    if not args.skip_rows:
        groups = {
            "fq": lambda: fq_mul_rows(ctx, {}),
            "msm": lambda: msm_rows(ctx, {}, args.quick, engine),
            "fixed": lambda: fixed_base_rows(ctx, {}, args.quick, engine),
        }
        parts += [groups[g] for g in args.parts.split(",") if g]
    for part in parts:
        try:
            result += part()
        except Exception:
            log.exception("benchmark part failed")
            failures.append("benchmark part")
        bad = [f"{r['op']} {r['size']}" for r in result if r.get("check") is False]
        failures += [b for b in bad if b not in failures]
        if args.json:  # after every part: a later crash keeps what came before
            with open(args.json, "w") as f:
                json.dump({"rows": result, "failures": failures, **extra}, f, indent=1)
    sys.stdout.write(_table(result) + "\n")
    sys.stdout.write(f"failures: {failures or 'none'}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
