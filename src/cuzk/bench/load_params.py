"""``cuzk-bench load-params``: how fast a key file streams into a device, and
with how much host memory.

Writes a .params file whose h query holds 2^LOG − 1 random G1 points and
whose b_g1 and b_g2 queries hold 2^(LOG−2) points each (made with the
device's fixed-base kernels, or the CPU's), through the same streaming writer
as ``cuzk gen-params``; then loads every query into the backend as the engine does
(:meth:`Backend.load_g1` / ``load_g2`` from the file's reader), once with the
file's pages dropped from the page cache (cold, where the kernel honours the
advice) and once warm. Each loaded query's first and last points are
compared with the CPU backend's load of the same bytes. Then the host's
part of a load alone, warm: the file read a chunk at a time as the CUDA
loader reads it (``read_warm_gb_s``), the same with each chunk read by
``READ_THREADS`` threads at once (``read_warm_threads_gb_s``: whether
splitting the reads would pay on this host), and those bytes decoded to
limbs as the CPU backend decodes them (``decode_gb_s``), so a slow load says
whether the host or the device holds it back. Prints one JSON object: GB/s for the
write, each load and the host's stages, and the peak host memory of the
process (the key must never be whole in it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from cuzk.algebra.arrays import fr_random, g1_from_zcash, g2_from_zcash
from cuzk.algebra.curves import G1
from cuzk.bench.hostmem import HostMemory
from cuzk.errors import CuzkError
from cuzk.formats.bellperson import MappedParams, write_params_from
from cuzk.groth16.keys import QUERIES, VerifyingKey, query_group
from cuzk.groth16.setup import CpuPoints

CHECK_POINTS = 512


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "load-params", help="stream a generated key file into a device: GB/s, host MiB"
    )
    p.add_argument("--log", type=int, default=20, help="log2 of the G1 points (G2: a quarter)")
    p.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the file is written")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--keep", action="store_true", help="keep the file")
    p.set_defaults(func=run)


class RandomPoints:
    """A key source of random points: h and b_g2 only (the others empty)."""

    def __init__(self, log: int, points, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.name = f"random key 2^{log}"
        quarter = 1 << max(0, log - 2)
        self._counts = {"h": (1 << log) - 1, "l": 0, "a": 1, "b_g1": quarter, "b_g2": quarter}
        self._scalars = {q: fr_random(min(n, 1 << 16), rng) for q, n in self._counts.items() if n}
        self.points = points
        one = G1.generator
        self.vk = VerifyingKey(one, one, _g2(), _g2(), one, _g2(), (one,))

    def count(self, query: str) -> int:
        return self._counts[query]

    def reader(self, query: str):
        from cuzk.algebra.arrays import to_zcash

        scalars = self._scalars.get(query)
        group = query_group(query)
        xp = self.points.xp

        def read(lo: int, hi: int, out: np.ndarray) -> None:
            idx = np.arange(lo, hi) % len(scalars)  # scalars repeat; points differ enough
            make = self.points.g1 if group == "G1" else self.points.g2
            enc = to_zcash(make(scalars[idx]), group, xp=xp)
            out[...] = enc if xp is np else enc.get()

        return read

    def where(self, query: str, index: int) -> str:
        return f"point {index}"


def _g2():
    from cuzk.algebra.curves import G2

    return G2.generator


def _drop_cache(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return True
    except (OSError, AttributeError):
        return False


def _words(handle, group: str, lo: int, hi: int) -> np.ndarray:
    """Montgomery limbs of points lo..hi of a loaded query, from either backend."""
    per = 12 if group == "G1" else 24
    native = getattr(handle, "native", None)
    if native is not None:
        return np.ascontiguousarray(native[lo:hi]).reshape(hi - lo, per)
    dev = handle.device
    words = dev[lo * per * 2 : hi * per * 2]
    return (
        (words.get() if hasattr(words, "get") else np.asarray(words))
        .view("<u8")
        .reshape(hi - lo, per)
    )


def run(args: argparse.Namespace) -> int:
    from cuzk.backends import get_backend
    from cuzk.backends.cpu import CpuBackend

    backend = get_backend(args.backend)
    points = CpuPoints(1 << 17, 1 << 17)
    if backend.point_maker() is not None:
        from cuzk.groth16.setup_gpu import GpuPoints

        points = GpuPoints(backend.point_maker())
    path = args.dir / f"cuzk-load-bench-2^{args.log}.params"
    report: dict = {"backend": backend.name, "log": args.log, "file": str(path)}
    try:
        with HostMemory() as mem:
            source = RandomPoints(args.log, points)
            t = time.perf_counter()
            size = write_params_from(path, source)
            report["write_s"] = round(time.perf_counter() - t, 3)
            report["bytes"] = size
            report["write_gb_s"] = round(size / report["write_s"] / 1e9, 3)
            params = MappedParams(path)
            for label, drop in (("cold", True), ("warm", False)):
                if drop:
                    report["cache_dropped"] = _drop_cache(path)
                t = time.perf_counter()
                handles = {
                    q: (backend.load_g2 if q == "b_g2" else backend.load_g1)(
                        params.count(q), params.reader(q)
                    )
                    for q in QUERIES
                }
                if backend.name == "cuda":
                    import cupy

                    cupy.cuda.Device(backend.ctx.device_id).synchronize()
                secs = time.perf_counter() - t
                report[f"load_{label}_s"] = round(secs, 3)
                report[f"load_{label}_gb_s"] = round(size / secs / 1e9, 3)
                if label == "warm":
                    report["check"] = _check(handles, params, CpuBackend())
                for h in handles.values():
                    close = getattr(h, "close", None)
                    if close is not None:
                        close()
            report.update(_host_stages(params))
        report.update(mem.report())
    except (CuzkError, OSError, ValueError) as e:
        print(f"cuzk-bench load-params: {e}", file=sys.stderr)
        return 2
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    print(json.dumps(report, indent=2))
    return 0 if report.get("check") else 1


# Bytes a host stage handles at a time: the CUDA loader's chunk.
HOST_CHUNK_BYTES = 192 << 20
READ_THREADS = 4


def _host_stages(params: MappedParams) -> dict:
    """GB/s of the file read alone (warm, a chunk at a time into one buffer;
    and split over READ_THREADS threads) and of the zcash decoding of what
    was read, over every query."""
    read_s = decode_s = split_s = 0.0
    total = 0
    pool = ThreadPoolExecutor(READ_THREADS)
    for q in QUERIES:
        n = params.count(q)
        g2 = query_group(q) == "G2"
        size = 192 if g2 else 96
        chunk = max(1, min(n, HOST_CHUNK_BYTES // size))
        buf = np.empty((chunk, size), np.uint8)
        read = params.reader(q)
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            t = time.perf_counter()
            read(lo, hi, buf[: hi - lo])
            t1 = time.perf_counter()
            (g2_from_zcash if g2 else g1_from_zcash)(buf[: hi - lo])
            decode_s += time.perf_counter() - t1
            read_s += t1 - t
            cuts = [lo + (hi - lo) * i // READ_THREADS for i in range(READ_THREADS + 1)]
            t = time.perf_counter()
            parts = [
                pool.submit(read, a, b, buf[a - lo : b - lo])
                for a, b in itertools.pairwise(cuts)
                if b > a
            ]
            for f in parts:
                f.result()
            split_s += time.perf_counter() - t
        total += n * size
    pool.shutdown()
    return {
        "read_warm_gb_s": round(total / max(read_s, 1e-9) / 1e9, 3),
        "read_warm_threads_gb_s": round(total / max(split_s, 1e-9) / 1e9, 3),
        "decode_gb_s": round(total / max(decode_s, 1e-9) / 1e9, 3),
    }


def _check(handles: dict, params: MappedParams, cpu) -> bool:
    """The first and last points of each query equal the CPU backend's load of them."""
    for q, h in handles.items():
        n = params.count(q)
        if not n:
            continue
        group = query_group(q)
        size = 192 if group == "G2" else 96
        read = params.reader(q)
        for lo in (0, max(0, n - CHECK_POINTS)):
            hi = min(n, lo + CHECK_POINTS)
            raw = np.empty((hi - lo, size), np.uint8)
            read(lo, hi, raw)

            def part(a, b, out, raw=raw):
                out[...] = raw[a:b]

            ref = (cpu.load_g2 if group == "G2" else cpu.load_g1)(hi - lo, part)
            if not np.array_equal(_words(h, group, lo, hi), _words(ref, group, 0, hi - lo)):
                return False
    return True
