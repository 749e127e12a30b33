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
same source, options and architecture (``python -m cuzk.backends.cuda.kernels
DEST``, with nvcc: every module the code loads, no list needed) is loaded from
there instead; any mismatch in the key falls back to NVRTC. ``cuzk kernels``
compiles them into the cache on the GPU instead, and the daemon loads them all
before it reports ready.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import cache
from pathlib import Path

from cuzk import environment

KERNEL_DIR = Path(__file__).with_name("kernels")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


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
