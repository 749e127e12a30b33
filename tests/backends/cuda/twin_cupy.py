"""A numpy stand-in for the part of CuPy that the MSM engine and its benchmark
use, launching kernels on the CPU twin (host_twin.HostKernels).

It lets the MSM benchmark's rows (``cuzk.bench.msm``), checks and variants
run end to end at tiny sizes on a machine without a GPU, so a slip in the
benchmark's Python shows up here rather than in a device call. Timings it reports are wall-clock and
meaningless.
"""

from __future__ import annotations

import sys
import time
import types

import numpy as np


class DevArray(np.ndarray):
    """A 'device' array: numpy with CuPy's get() / set()."""

    def get(self, stream=None) -> np.ndarray:
        return np.array(self)

    def set(self, arr, stream=None) -> None:
        self[...] = np.asarray(arr).reshape(self.shape)


def _dev(a) -> DevArray:
    return np.asarray(a).view(DevArray)


def _wrap(fn):
    def f(*args, **kwargs):
        out = fn(*args, **kwargs)
        return _dev(out) if isinstance(out, np.ndarray) else out

    return f


class _Event:
    def __init__(self, *a, **k) -> None:
        self.t = time.perf_counter()

    def record(self, stream=None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass


class _Stream:
    def __init__(self, *a, **k) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def wait_event(self, ev) -> None:
        pass

    def record(self, ev=None) -> _Event:
        return _Event()

    def synchronize(self) -> None:
        pass


class _Device:
    def __init__(self, device_id: int = 0) -> None:
        self.id = device_id
        self.compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _RandomState:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def randint(self, low, high, size, dtype=np.int64):
        return _dev(self.rng.integers(low, high, size=size, dtype=dtype))


class TwinModule:
    """ctx.module(...)'s stand-in: kernels of one twin library."""

    def __init__(self, host) -> None:
        self.host = host

    def get_function(self, name: str):
        def launch(grid, block, args, **_kw) -> None:
            self.host.launch(name, grid[0] * block[0], tuple(args), block[0])

        return launch


class TwinContext:
    """DeviceContext's stand-in over the CPU twin."""

    def __init__(self, host_kernels, limit_bytes: int = 1 << 40) -> None:
        from cuzk.backends.cuda.memory import DeviceBudget

        self.device_id = 0
        self.budget = DeviceBudget(0, limit_bytes)
        self._host_kernels = host_kernels

    def module(self, name: str, extra: tuple[str, ...] = ()):
        return TwinModule(self._host_kernels(name, tuple(extra)))


def make() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    for name in (
        "asarray",
        "array",
        "zeros",
        "empty",
        "full",
        "cumsum",
        "concatenate",
        "stack",
        "flatnonzero",
        "ascontiguousarray",
        "take",
        "packbits",
        "unpackbits",
    ):
        setattr(cp, name, _wrap(getattr(np, name)))
    cp.ndarray = DevArray
    cp.uint32, cp.uint64 = np.uint32, np.uint64
    cp.random = types.SimpleNamespace(RandomState=_RandomState)

    def pinned(nbytes: int):
        return bytearray(nbytes)

    cp.cuda = types.SimpleNamespace(
        Device=_Device,
        Event=_Event,
        Stream=_Stream,
        get_current_stream=lambda: _Stream(),
        get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        alloc_pinned_memory=pinned,
        profiler=types.SimpleNamespace(start=lambda: None, stop=lambda: None),
    )
    cp.asnumpy = lambda a: np.array(a)
    return cp


def install(monkeypatch) -> types.ModuleType:
    cp = make()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp
