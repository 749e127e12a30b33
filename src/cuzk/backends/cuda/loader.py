"""Compile and load the CUDA kernels of this package through CuPy (NVRTC).

Kernels live in ``kernels/*.cu`` with shared code in ``kernels/*.cuh``. A
module is compiled for the running device's architecture with the kernels
folder on the include path; CuPy caches the compiled binary on disk keyed
by a hash of the source and options (``CUZK_KERNEL_CACHE`` or CuPy's own
``CUPY_CACHE_DIR`` chooses where), so a restart does not recompile.
The source hash also covers every header a module includes, so editing a
header recompiles its users.

Large modules take a while to compile (the NTT: about a minute). Where
``CUZK_KERNEL_PREBUILT`` names a folder, a cubin built ahead of time for the
same source, options and architecture (``python -m cuzk.backends.cuda.loader
DEST``, with nvcc: every module the code loads, no list needed) is loaded from
there instead; any mismatch in the key falls back to NVRTC. ``cuzk kernels``
compiles them into the cache on the GPU instead, and the daemon loads them all
before it reports ready.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from cuzk import environment
from cuzk.backends.cuda.kernels import all_modules

KERNEL_DIR = Path(__file__).with_name("kernels")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
# Every module the backend loads and the builds its tests and benchmarks load
# (cuzk.backends.cuda.kernels gathers them from the code that loads them).
PREBUILD_DEFAULT = all_modules(variants=True)


def _expand_hash(path: Path, seen: set[Path], h: hashlib._Hash) -> None:
    if path in seen:
        return
    seen.add(path)
    text = path.read_text()
    h.update(path.name.encode() + b"\0" + text.encode())
    for inc in _INCLUDE.findall(text):
        dep = KERNEL_DIR / inc
        if dep.exists():
            _expand_hash(dep, seen, h)


def source_hash(name: str) -> str:
    """A hash of a kernel file and every local header it includes."""
    h = hashlib.sha256()
    _expand_hash(KERNEL_DIR / name, set(), h)
    return h.hexdigest()[:16]


def compile_options(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    import cupy

    arch = f"--gpu-architecture=sm_{cupy.cuda.Device().compute_capability}"
    return (arch, "--std=c++17", f"-I{KERNEL_DIR}", "-DCUZK_NVRTC=1", *extra)


def module_key(name: str, extra: tuple[str, ...], arch: str) -> str:
    """What a prebuilt binary must match: source (with headers), options, arch."""
    h = hashlib.sha256("\0".join((source_hash(name), arch, *extra)).encode())
    return h.hexdigest()[:16]


def prebuilt_path(name: str, extra: tuple[str, ...], arch: str) -> Path | None:
    folder = environment.kernel_prebuilt()
    if folder is None:
        return None
    path = folder / f"{Path(name).stem}-{module_key(name, extra, arch)}.cubin"
    return path if path.exists() else None


def kernel_cache_dir() -> Path:
    """Where NVRTC's builds are cached (:func:`cuzk.environment.kernel_cache_dir`)."""
    return environment.kernel_cache_dir()


@cache
def load_module(name: str, extra: tuple[str, ...] = ()):
    """The compiled module for ``kernels/<name>`` (a cupy.RawModule)."""
    import cupy

    arch = str(cupy.cuda.Device().compute_capability)
    pre = prebuilt_path(name, extra, arch)
    if pre is not None:
        return cupy.RawModule(path=str(pre))
    cache = environment.kernel_cache()
    if cache is not None:
        os.environ.setdefault("CUPY_CACHE_DIR", str(cache))
    src = (KERNEL_DIR / name).read_text()
    # The header hash goes into the source as a comment, so CuPy's cache key
    # (which hashes the source text) changes when an included header changes.
    src = f"// cuzk source hash {source_hash(name)}\n" + src
    return cupy.RawModule(code=src, options=compile_options(extra), backend="nvrtc")


def cubin_name(name: str, extra: tuple[str, ...], arch: str) -> str:
    return f"{Path(name).stem}-{module_key(name, tuple(extra), arch)}.cubin"


def describe(name: str, extra: tuple[str, ...]) -> str:
    return name + (f" {' '.join(extra)}" if extra else "")


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
