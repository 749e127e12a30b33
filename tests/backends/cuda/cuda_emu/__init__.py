"""A CPU stand-in for the small part of CuPy that cuzk's CUDA backend uses.

Kernels are compiled with the host C++ compiler against ``cuda_host_shim.h``
(one std::thread per CUDA thread) and launched through ctypes with CUDA's own
argument convention (an array of pointers to the argument values). Device
arrays are numpy arrays (those of the allocation functions with CuPy's
``get`` and ``set``), pinned host memory a numpy buffer. This lets the
backend's Python code and its kernels run, bit for bit, on a machine without
a GPU, at small sizes.

``install()`` puts the stand-in into ``sys.modules['cupy']``; it refuses when
the real CuPy is importable, so a GPU run never uses it by accident.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path

import numpy as np

SHIM = Path(__file__).with_name("cuda_host_shim.h")
_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)',
    re.S,
)
_CACHE = Path(os.environ.get("CUZK_EMU_CACHE", Path(tempfile.gettempdir()) / "cuzk-emu-cache"))


def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++"))


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("cupy") is not None and not isinstance(
        sys.modules.get("cupy"), _FakeCupy
    ):
        return "the real CuPy is installed: host emulation is only for machines without it"
    if compiler() is None:
        return "no host C++ compiler (g++) for the kernel emulation"
    return None


def _param_type(param: str) -> str:
    param = param.replace("__restrict__", " ").strip()
    m = re.match(r"(.*?)(\w+)\s*$", param, re.S)
    if not m:
        raise ValueError(f"cannot parse kernel parameter {param!r}")
    return " ".join(m.group(1).split())


def _glue(source: str) -> tuple[str, dict[str, int]]:
    out = []
    nparams: dict[str, int] = {}
    for name, params in _KERNEL.findall(source):
        plist = [p for p in (x.strip() for x in params.split(",")) if p]
        types_ = [_param_type(p) for p in plist]
        call = ", ".join(f"*({t}*)args[{i}]" for i, t in enumerate(types_))
        out.append(
            f'extern "C" void cuzk_emu_{name}(unsigned gx, unsigned gy, unsigned gz, '
            f"unsigned bx, unsigned by, unsigned bz, unsigned long long smem, void** args) {{\n"
            f"  cuzk_emu_launch(dim3{{gx, gy, gz}}, dim3{{bx, by, bz}}, smem, "
            f"[&] {{ {name}({call}); }});\n}}\n"
        )
        nparams[name] = len(types_)
    return "\n".join(out), nparams


def build(code: str, options: tuple[str, ...] = ()) -> tuple[ctypes.CDLL, dict[str, int]]:
    """Compile kernel source for the host; cached by source, options and shim."""
    incs = [o for o in options if o.startswith(("-I", "-D"))]
    glue, nparams = _glue(code)
    text = code + "\n// ---- emulation glue ----\n" + glue
    key = hashlib.sha256(
        (text + "\0" + "\0".join(incs) + "\0" + SHIM.read_text()).encode()
    ).hexdigest()[:20]
    # Headers are hashed too: the loader already prefixes a hash of them.
    _CACHE.mkdir(parents=True, exist_ok=True)
    so = _CACHE / f"k{key}.so"
    if not so.exists():
        src = _CACHE / f"k{key}.cpp"
        src.write_text(text)
        cmd = [
            compiler() or "g++",
            "-std=c++20",
            "-O1",
            "-fPIC",
            "-shared",
            "-pthread",
            "-w",
            "-include",
            str(SHIM),
            *incs,
            str(src),
            "-o",
            str(so) + ".tmp",
        ]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"host compilation failed:\n{res.stderr[-4000:]}")
        os.replace(str(so) + ".tmp", so)
    return ctypes.CDLL(str(so)), nparams


_SCALARS = {
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint16): ctypes.c_uint16,
    np.dtype(np.uint8): ctypes.c_uint8,
    np.dtype(np.float64): ctypes.c_double,
    np.dtype(np.float32): ctypes.c_float,
}


class FakeKernel:
    def __init__(self, lib: ctypes.CDLL, name: str, nparams: int) -> None:
        self.name = name
        self.nparams = nparams
        self._fn = getattr(lib, f"cuzk_emu_{name}")
        self._fn.restype = None
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid, block, args, *, shared_mem: int = 0, stream=None) -> None:
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        if len(args) != self.nparams:
            raise TypeError(f"{self.name}: {len(args)} arguments for {self.nparams} parameters")
        if shared_mem > max(48 * 1024, self.max_dynamic_shared_size_bytes):
            raise ValueError(f"{self.name}: {shared_mem} bytes of shared memory over the limit")
        if block[0] * block[1] * block[2] > 1024:
            raise ValueError(f"{self.name}: more than 1024 threads per block")
        keep = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise ValueError(f"{self.name}: non-contiguous array argument")
                keep.append(ctypes.c_void_p(a.ctypes.data if a.size else 0))
            elif isinstance(a, np.generic) and a.dtype in _SCALARS:
                keep.append(_SCALARS[a.dtype](a.item()))
            elif a is None:
                keep.append(ctypes.c_void_p(0))
            else:
                raise TypeError(
                    f"{self.name}: argument of type {type(a).__name__} (use numpy scalars)"
                )
        ptrs = (ctypes.c_void_p * max(1, len(keep)))(*[ctypes.addressof(k) for k in keep])
        with _LAUNCH_LOCK:  # one kernel at a time, as the device's streams order them
            self._fn(*grid, *block, ctypes.c_ulonglong(shared_mem), ptrs)


class FakeRawModule:
    def __init__(self, code: str, options: tuple[str, ...] = (), backend: str = "nvrtc", **_kw):
        self._lib, self._nparams = build(code, tuple(options))
        self._kernels: dict[str, FakeKernel] = {}

    def get_function(self, name: str) -> FakeKernel:
        if name not in self._nparams:
            raise AttributeError(f"no kernel {name!r} in module")
        if name not in self._kernels:
            self._kernels[name] = FakeKernel(self._lib, name, self._nparams[name])
        return self._kernels[name]


class _Pool:
    def __init__(self) -> None:
        self.limit = 0

    def set_limit(self, size: int = 0, fraction: float | None = None) -> None:
        self.limit = size

    def get_limit(self) -> int:
        return self.limit

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass


class _Device:
    compute_capability = "90"

    def __init__(self, device_id: int = 0) -> None:
        self.id = device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def synchronize(self) -> None:
        pass

    def use(self) -> None:
        pass


class _Event:
    def __init__(self, *a, **k) -> None:
        import time

        self._time = time
        self.t = 0.0

    def record(self, stream=None) -> None:
        self.t = self._time.perf_counter()

    def synchronize(self) -> None:
        pass


class _Stream:
    """Kernels run where they are launched: a stream only has to be a context
    (the current one of the thread, as CuPy keeps it)."""

    null: _Stream

    def __init__(self, non_blocking: bool = False, priority: int = 0) -> None:
        # clamped to an H200's range (least 0, greatest -5), as CUDA does
        self.non_blocking, self.priority = non_blocking, min(0, max(-5, priority))

    def __enter__(self):
        stack = _current.__dict__.setdefault("stack", [])
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _current.stack.pop()
        return None

    def synchronize(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


_current = threading.local()
# A launch's grid, block and shared memory are the compiled module's globals
# (cuda_host_shim.h): two host threads (the prover's side branch beside its own
# line) launch one kernel at a time.
_LAUNCH_LOCK = threading.Lock()
_Stream.null = _Stream()


def _current_stream() -> _Stream:
    stack = getattr(_current, "stack", None)
    return stack[-1] if stack else _Stream.null


def _elapsed(a: _Event, b: _Event) -> float:
    return (b.t - a.t) * 1e3


class _FakeCupy(types.ModuleType):
    pass


class _DeviceArray(np.ndarray):
    """A 'device' array: numpy with CuPy's host transfers (``get``, ``set``), as
    strict about shapes and dtypes as CuPy is. Copies are synchronous."""

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        if out is None:
            return np.array(self, order=order)
        if out.shape != self.shape or out.dtype != self.dtype:
            raise ValueError(f"get: out {out.shape} {out.dtype} for {self.shape} {self.dtype}")
        out[...] = self
        return out

    def set(self, arr, stream=None) -> None:
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"set: a numpy array, not {type(arr).__name__}")
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f"set: {arr.shape} {arr.dtype} into {self.shape} {self.dtype}")
        if not self.flags.c_contiguous:
            raise RuntimeError("set: cannot set to a non-contiguous array")
        self[...] = arr


def _allocating(fn):
    """A numpy allocation function that returns device arrays."""
    return lambda *args, **kwargs: fn(*args, **kwargs).view(_DeviceArray)


def _asnumpy(a, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
    if out is None:
        return np.asarray(a)
    out[...] = np.asarray(a)
    return out


def make_module() -> types.ModuleType:
    cp = _FakeCupy("cupy")
    cp.ndarray = np.ndarray
    cp.asarray = lambda a, dtype=None: np.asarray(a, dtype=dtype)
    cp.asnumpy = _asnumpy
    for name in ("empty", "zeros", "ones", "full"):
        setattr(cp, name, _allocating(getattr(np, name)))
        setattr(cp, f"{name}_like", _allocating(getattr(np, f"{name}_like")))
    cp.RawModule = FakeRawModule
    pool = _Pool()
    cp.get_default_memory_pool = lambda: pool
    runtime = types.SimpleNamespace(
        memGetInfo=lambda: (64 << 30, 80 << 30),
        getDeviceCount=lambda: 1,
        deviceSynchronize=lambda: None,
    )

    class OutOfMemoryError(MemoryError):
        pass

    cuda = types.SimpleNamespace(
        Device=_Device,
        runtime=runtime,
        Event=_Event,
        get_elapsed_time=_elapsed,
        Stream=_Stream,
        get_current_stream=_current_stream,
        memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
        set_allocator=lambda allocator=None: None,  # nothing is allocated on a device
        alloc_pinned_memory=lambda nbytes: np.empty(nbytes, dtype=np.uint8),  # a host buffer
    )
    cp.cuda = cuda

    def __getattr__(name: str):
        return getattr(np, name)

    cp.__getattr__ = __getattr__
    return cp


def uninstall() -> None:
    """Remove the stand-in (and the kernels the loader cached through it)."""
    if isinstance(sys.modules.get("cupy"), _FakeCupy):
        del sys.modules["cupy"]
        from cuzk.backends.cuda import loader

        loader.load_module.cache_clear()


def install() -> types.ModuleType:
    """Make ``import cupy`` return the stand-in (only where CuPy is absent)."""
    current = sys.modules.get("cupy")
    if isinstance(current, _FakeCupy):
        return current
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    cp = make_module()
    sys.modules["cupy"] = cp
    return cp
