"""The MSM kernels' CPU twin: the .cu files compiled as C++ and run thread by thread
(the ``host_kernels`` fixture of these tests and of tests/bench).

The kernels of ``kernels/msm*.cu`` use no shared memory, barriers or warp
operations, so running each thread in turn on the CPU computes exactly what
the GPU computes. For every kernel a launcher ``launch_<name>(threads, block,
args...)`` is generated from its signature; the carry-chain primitives run
through their host emulation (cc_chain in kernels/mont.cuh).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from cuzk.backends.cuda.loader import KERNEL_DIR, source_hash

_KERNEL = re.compile(
    r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(([^)]*)\)', re.S
)
_BUILD_DIR = Path(tempfile.gettempdir()) / "cuzk-host-twin"


def _params(text: str) -> list[tuple[str, str]]:
    out = []
    for p in text.split(","):
        p = " ".join(p.split())
        m = re.match(r"(.*?)(\w+)$", p)
        out.append((m.group(1).strip(), m.group(2)))
    return out


def _ctype(decl: str):
    if "*" in decl:
        return ctypes.c_void_p
    if "uint64_t" in decl:
        return ctypes.c_uint64
    if "uint32_t" in decl:
        return ctypes.c_uint32
    raise TypeError(f"no ctypes mapping for {decl!r}")


class HostKernels:
    """Compiled host twin of one kernel file with one set of defines."""

    def __init__(self, name: str, defines: tuple[str, ...] = ()) -> None:
        src = (KERNEL_DIR / name).read_text()
        self.signatures = {m.group(1): _params(m.group(2)) for m in _KERNEL.finditer(src)}
        launchers = []
        for kname, params in self.signatures.items():
            decl = ", ".join(f"{t} {n}" for t, n in params)
            call = ", ".join(n for _, n in params)
            launchers.append(
                f'extern "C" void launch_{kname}('
                "unsigned long long cuzk_threads, unsigned cuzk_block"
                f"{', ' if decl else ''}{decl}) {{\n"
                "  unsigned long long cuzk_blocks =\n"
                "      (cuzk_threads + cuzk_block - 1) / cuzk_block;\n"
                f"  blockDim.x = cuzk_block; gridDim.x = (unsigned)cuzk_blocks;\n"
                f"  for (unsigned long long cuzk_b = 0; cuzk_b < cuzk_blocks; cuzk_b++) {{\n"
                f"    blockIdx.x = (unsigned)cuzk_b;\n"
                f"    for (unsigned cuzk_t = 0; cuzk_t < cuzk_block; cuzk_t++) {{\n"
                f"      threadIdx.x = cuzk_t; {kname}({call});\n    }}\n"
                f"  }}\n}}\n"
            )
        harness = (
            f'#include "{name}"\n'
            'extern "C" { cuzk_dim3 threadIdx, blockIdx, blockDim, gridDim; }\n'
            + "\n".join(launchers)
        )
        key = hashlib.sha256(
            (source_hash(name) + " ".join(defines) + harness).encode()
        ).hexdigest()[:16]
        _BUILD_DIR.mkdir(exist_ok=True)
        lib = _BUILD_DIR / f"{Path(name).stem}-{key}.so"
        if not lib.exists():
            cpp = _BUILD_DIR / f"{Path(name).stem}-{key}.cpp"
            cpp.write_text(harness)
            cmd = [
                _compiler(),
                "-O1",
                "-std=c++17",
                "-shared",
                "-fPIC",
                f"-I{KERNEL_DIR}",
                *defines,
                str(cpp),
                "-o",
                str(lib) + ".tmp",
            ]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"CPU twin of {name} did not compile:\n{done.stderr[-4000:]}")
            Path(str(lib) + ".tmp").rename(lib)
        self._lib = ctypes.CDLL(str(lib))
        self._fns = {}
        for kname, params in self.signatures.items():
            f = getattr(self._lib, f"launch_{kname}")
            f.argtypes = [ctypes.c_ulonglong, ctypes.c_uint] + [_ctype(t) for t, _ in params]
            f.restype = None
            self._fns[kname] = f

    def launch(self, name: str, threads: int, args: tuple, block: int = 128) -> None:
        if threads <= 0:
            return
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, f"{name}: non-contiguous array argument"
                conv.append(a.ctypes.data)
            else:
                conv.append(int(a))
        self._fns[name](threads, block, *conv)


def _compiler() -> str:
    for cc in ("g++", "c++", "clang++"):
        if shutil.which(cc):
            return cc
    pytest.skip("no C++ compiler for the kernels' CPU twin")


_CACHE: dict[tuple[str, tuple[str, ...]], HostKernels] = {}


@pytest.fixture(scope="session")
def host_kernels():
    """host_kernels(file, defines) → a HostKernels (built once per session)."""

    def get(name: str, defines: tuple[str, ...] = ()) -> HostKernels:
        key = (name, defines)
        if key not in _CACHE:
            _CACHE[key] = HostKernels(name, defines)
        return _CACHE[key]

    return get
