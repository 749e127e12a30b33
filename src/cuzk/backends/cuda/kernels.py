"""Every CUDA kernel module the code loads, from the code that loads it.

A module is a ``kernels/*.cu`` file with a set of compile defines; each
engine names its file and defines where it loads it (``KERNEL_MODULE`` and
``KERNEL_DEFINES`` of ``fr``, ``ntt``, ``hpoly``, ``spmv``, ``witness``; the
MSM's groups' :data:`~cuzk.backends.cuda.msm.spec.G1_SPEC`, ``G2_SPEC``), the
defines coming from the tuning tables (:mod:`cuzk.backends.cuda.tuning`).
:func:`backend_modules` gathers them: what ``cuzk kernels`` builds and what
the daemon loads before it reports ready, so that no proof waits on a compile.
:data:`PREBUILD_DEFAULT` adds the field-product probe of ``cuzk-bench
kernels``; :func:`prebuild` builds cubins of them with nvcc
(``python -m cuzk.backends.cuda.kernels DEST``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from cuzk.backends.cuda import fr, hpoly, ntt, spmv, witness
from cuzk.backends.cuda.loader import KERNEL_DIR, cubin_name, describe
from cuzk.backends.cuda.msm import engine as msm
from cuzk.backends.cuda.msm.spec import ARITH_MODULE, G1_SPEC, G2_SPEC

Module = tuple[str, tuple[str, ...]]  # (file under kernels/, compile defines)


def backend_modules() -> tuple[Module, ...]:
    """The modules a CUDA backend loads to prove."""
    return (
        (fr.KERNEL_MODULE, ()),
        (ntt.KERNEL_MODULE, ntt.KERNEL_DEFINES),
        (hpoly.KERNEL_MODULE, ()),
        (spmv.KERNEL_MODULE, spmv.KERNEL_DEFINES),
        *((msm.KERNEL_MODULE, spec.defines) for spec in (G1_SPEC, G2_SPEC)),
        (witness.KERNEL_MODULE, ()),
    )


# Every module the code loads: the backend's, then the benchmark's probe.
PREBUILD_DEFAULT: tuple[Module, ...] = (*backend_modules(), ARITH_MODULE)


def prebuild(
    dest: Path,
    items=PREBUILD_DEFAULT,
    arch: str = "90",
    nvcc: str = "nvcc",
    jobs: int = 2,
    progress=None,
) -> list[Path]:
    """Build cubins for ``items`` ((name, extra) pairs) with nvcc into ``dest``;
    ``progress(done, total, item, path, seconds)`` after each (seconds None: it
    was there already)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    dest.mkdir(parents=True, exist_ok=True)
    items = list(dict.fromkeys((n, tuple(e)) for n, e in items))
    lock = threading.Lock()
    done = [0]

    def build(item) -> Path:
        name, extra = item
        path = dest / cubin_name(name, extra, arch)
        took = None
        if not path.exists():
            t = time.perf_counter()
            cmd = [nvcc, f"-arch=sm_{arch}", "--std=c++17", f"-I{KERNEL_DIR}", "-DCUZK_NVRTC=1"]
            cmd += [*extra, "-cubin", "-o", str(path) + ".tmp", str(KERNEL_DIR / name)]
            subprocess.run(cmd, check=True)
            os.replace(str(path) + ".tmp", path)
            took = time.perf_counter() - t
        if progress is not None:
            with lock:
                done[0] += 1
                progress(done[0], len(items), item, path, took)
        return path

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(build, items))


def print_progress(done: int, total: int, item, path: Path, seconds: float | None) -> None:
    what = "present" if seconds is None else f"built in {seconds:.1f} s"
    print(f"[{done}/{total}] {describe(*item)}: {what} ({path.name})", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="prebuild cuzk's CUDA kernels with nvcc: every module the code loads "
        "(see also `cuzk kernels`)"
    )
    parser.add_argument("dest", type=Path)
    parser.add_argument("--arch", default="90")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        help="NAME.cu[:OPTION,OPTION...] to build instead of every module the code loads",
    )
    args = parser.parse_args(argv)
    items = PREBUILD_DEFAULT
    if args.module:
        items = []
        for spec in args.module:
            name, _, opts = spec.partition(":")
            items.append((name, tuple(o for o in opts.split(",") if o)))
    print(f"building {len(set(items))} kernel modules into {args.dest}", file=sys.stderr)
    paths = prebuild(args.dest, items, args.arch, jobs=args.jobs, progress=print_progress)
    sys.stdout.write("".join(f"{p}\n" for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
