"""The environment variables cuzk reads, each parsed and checked here.

:data:`VARIABLES` is the table docs/ENVIRONMENT.md shows (a test keeps the two
equal, and finds any read of a ``CUZK_`` variable elsewhere in the package).
The readers look at the environment when called, not at import, so a test or
a launcher may set a variable late. A value that cannot be used is an
:class:`~cuzk.errors.InputError` naming the variable and what it takes.

The service's own variables (``CUZK_HOME``, ``CUZK_ADDR``, ``CUZK_TOKEN``,
``FIL_PROOFS_PARAMETER_CACHE``) are read where the config and the client are
made (``engine/config.py``, ``service/client.py``), and listed here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cuzk.errors import InputError


@dataclass(frozen=True)
class Variable:
    name: str
    default: str  # what unset means
    meaning: str


VARIABLES = (
    Variable(
        "CUZK_HOME",
        "`~/.cache/cuzk`",
        "the daemons' journals (`daemons/<listen address>/`); with `--no-config` also "
        "the socket and `params/`",
    ),
    Variable(
        "CUZK_ADDR",
        "where a daemon on its defaults listens",
        "the daemon `cuzk-bench` talks to",
    ),
    Variable("CUZK_TOKEN", "none", "bearer token `cuzk-bench` sends to a TCP daemon"),
    Variable(
        "FIL_PROOFS_PARAMETER_CACHE",
        "none",
        "a folder searched for `.params` / `.vk` files after `[srs] param_cache` "
        "(Filecoin's own variable)",
    ),
    Variable(
        "CUZK_CIRCUIT_CACHE",
        "`~/.cache/cuzk/circuits`",
        "compiled circuits and their matrices, cached on disk",
    ),
    Variable(
        "CUZK_CPU_NATIVE",
        "`1`",
        "`0`: the CPU backend and the setup run their pure-Python twins instead of the C kernels",
    ),
    Variable(
        "CUZK_THREADS",
        "the CPUs this process may run on",
        "threads of the CPU backend's C kernels (an integer; below 1 means 1)",
    ),
    Variable(
        "CUZK_NATIVE_ARITH",
        "MULX/ADX assembly where the CPU has BMI2 and ADX",
        "`portable`: the C kernels' Montgomery product in portable C",
    ),
    Variable(
        "CUZK_KERNEL_CACHE",
        "CuPy's `CUPY_CACHE_DIR` (`~/.cupy/kernel_cache`)",
        "where CUDA kernels compiled by NVRTC are cached (sets `CUPY_CACHE_DIR` when that "
        "is unset)",
    ),
    Variable(
        "CUZK_KERNEL_PREBUILT",
        "none",
        "a folder of cubins built ahead of time "
        "(`cuzk kernels --nvcc DEST`), loaded instead of compiling",
    ),
    Variable(
        "CUZK_FAIL_DEVICE",
        "no failure is injected",
        "a test hook: `ORDINAL:AFTER[:MODE]` makes the daemon's device ORDINAL fail as it "
        "starts its partition AFTER+1; MODE `lost` (the default: every later partition and "
        "probe there fails too) or `once` (the first probe passes)",
    ),
)
NAMES = frozenset(v.name for v in VARIABLES)


def _get(name: str) -> str:
    return os.environ.get(name, "")


def _bad(name: str, value: str, takes: str) -> InputError:
    return InputError("environment", name, f"{value!r}: takes {takes}")


def cpu_native() -> bool:
    """``CUZK_CPU_NATIVE``: False when ``0`` (the pure-Python twins)."""
    value = _get("CUZK_CPU_NATIVE")
    if value not in ("", "0", "1"):
        raise _bad("CUZK_CPU_NATIVE", value, "0 (the Python twins) or 1 (the C kernels)")
    return value != "0"


def threads() -> int | None:
    """``CUZK_THREADS``: the C kernels' thread count (at least 1), or None (one
    per CPU this process may run on)."""
    value = _get("CUZK_THREADS")
    if not value:
        return None
    try:
        return max(1, int(value))
    except ValueError:
        raise _bad("CUZK_THREADS", value, "a number of threads") from None


def portable_arithmetic() -> bool:
    """``CUZK_NATIVE_ARITH=portable``: the C Montgomery product instead of the assembly."""
    value = _get("CUZK_NATIVE_ARITH")
    if value not in ("", "portable"):
        raise _bad("CUZK_NATIVE_ARITH", value, "portable (or unset: the assembly where it runs)")
    return value == "portable"


def _folder(name: str) -> Path | None:
    value = _get(name)
    return Path(value) if value else None


def circuit_cache() -> Path | None:
    """``CUZK_CIRCUIT_CACHE``: the compiled-circuit cache's folder, when set."""
    return _folder("CUZK_CIRCUIT_CACHE")


def kernel_cache() -> Path | None:
    """``CUZK_KERNEL_CACHE``: where NVRTC's compiled kernels are cached, when set."""
    return _folder("CUZK_KERNEL_CACHE")


def kernel_cache_dir() -> Path:
    """Where NVRTC's compiled kernels are: ``CUZK_KERNEL_CACHE``, else CuPy's
    ``CUPY_CACHE_DIR``, else CuPy's default ``~/.cupy/kernel_cache``."""
    return kernel_cache() or _folder("CUPY_CACHE_DIR") or Path.home() / ".cupy" / "kernel_cache"


def kernel_prebuilt() -> Path | None:
    """``CUZK_KERNEL_PREBUILT``: a folder of prebuilt cubins, when set."""
    return _folder("CUZK_KERNEL_PREBUILT")


@dataclass(frozen=True)
class DeviceFailure:
    """``CUZK_FAIL_DEVICE``: the device made to fail, after how many partitions, how."""

    ordinal: int
    after: int  # partitions it proves before it fails
    mode: str  # "lost" (stays failed) or "once" (one failure, then it recovers)


def fail_device() -> DeviceFailure | None:
    """``CUZK_FAIL_DEVICE=ORDINAL:AFTER[:MODE]``, or None when unset."""
    value = _get("CUZK_FAIL_DEVICE")
    if not value:
        return None
    parts = value.split(":")
    takes = "ORDINAL:AFTER[:MODE], e.g. 1:3 or 1:3:once (MODE lost or once)"
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[:2]):
        raise _bad("CUZK_FAIL_DEVICE", value, takes)
    mode = parts[2] if len(parts) == 3 else "lost"
    if mode not in ("lost", "once"):
        raise _bad("CUZK_FAIL_DEVICE", value, takes)
    return DeviceFailure(int(parts[0]), int(parts[1]), mode)
