"""Where the heavy maths runs: ``cpu`` (the reference) and ``cuda``."""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.backends.base import Backend
from cuzk.backends.cuda import driver as _driver


def get_backend(name: str = "auto") -> Backend:
    """``cpu``, ``cuda``, or ``auto`` (CUDA when a GPU and CuPy are present)."""
    if name == "cpu":
        from cuzk.backends.cpu import CpuBackend

        return CpuBackend()
    if name in ("cuda", "auto"):
        try:
            from cuzk.backends.cuda import CudaBackend, cuda_available
        except ImportError:
            if name == "cuda":
                raise
        else:
            if cuda_available():
                return CudaBackend()
            if name == "cuda":
                raise RuntimeError(choose_backend("cuda").error)
        from cuzk.backends.cpu import CpuBackend

        return CpuBackend()
    raise ValueError(f"unknown backend {name!r}: expected cpu, cuda or auto")


def memory_model(name: str):
    """A backend's memory model by name ("cuda" or "cpu"): the byte counts of its
    keys and proofs from a circuit's counts, without a device (the CUDA one:
    :class:`cuzk.backends.cuda.model.CudaMemoryModel`; the CPU backend's class
    answers its own ``prove_host_bytes``)."""
    if name == "cuda":
        from cuzk.backends.cuda.model import MODEL

        return MODEL
    if name == "cpu":
        from cuzk.backends.cpu import CpuBackend

        return CpuBackend
    raise ValueError(f"unknown backend {name!r}: expected cpu or cuda")


@dataclass(frozen=True)
class GpuInfo:
    """One GPU CuPy sees: its ordinal, its name and its memory."""

    ordinal: int
    name: str
    total_bytes: int


def gpus() -> list[GpuInfo]:
    """Every GPU CuPy sees (CuPy must be importable: :func:`choose_backend` said so)."""
    import cupy

    out = []
    for i in range(cupy.cuda.runtime.getDeviceCount()):
        with cupy.cuda.Device(i):
            _free, total = cupy.cuda.runtime.memGetInfo()
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        out.append(GpuInfo(i, name, int(total)))
    return out


def open_gpu(ordinal: int, limit_bytes: int) -> Backend:
    """The CUDA backend of one GPU with a VRAM budget of ``limit_bytes`` (its
    ``device_budget``, which the engine's reservations on that GPU share)."""
    from cuzk.backends.cuda import CudaBackend
    from cuzk.backends.cuda.memory import DeviceContext

    return CudaBackend(ctx=DeviceContext(device_id=ordinal, limit_bytes=limit_bytes))


@dataclass(frozen=True)
class BackendChoice:
    """The backend a ``[gpus] backend`` setting gives on this host, and why."""

    name: str  # "cuda" or "cpu"
    reason: str
    warning: str | None = None  # said at WARNING when the daemon starts
    error: str | None = None  # the setting cannot be met: why, and the command that fixes it


def choose_backend(
    requested: str,
    cupy_gpus: int | None = -1,
    driver: _driver.DriverInfo | None = None,
) -> BackendChoice:
    """``requested`` ("auto", "cuda" or "cpu") on this host. ``cupy_gpus``: the
    GPUs CuPy sees (None: CuPy is not installed; -1, the default: asked here);
    ``driver``: what nvidia-smi shows (default: asked here, only when CuPy
    sees no GPU). Tests pass stand-ins for both."""
    if requested == "cpu":
        return BackendChoice("cpu", '[gpus] backend = "cpu"')
    if requested not in ("auto", "cuda"):
        raise ValueError(f"unknown backend {requested!r}: expected cpu, cuda or auto")
    if cupy_gpus == -1:
        from cuzk.backends.cuda import cupy_device_count

        cupy_gpus = cupy_device_count()
    if cupy_gpus:
        how = "as configured" if requested == "cuda" else "auto"
        return BackendChoice("cuda", f"CuPy sees {cupy_gpus} GPU(s) ({how})")
    info = driver if driver is not None else _driver.probe()
    cmd = _driver.pip_command(info.extra)
    if info.has_gpu:
        names = ", ".join(sorted({g.name for g in info.gpus}))
        shows = f"the driver shows {len(info.gpus)} GPU(s) ({names}; CUDA {info.cuda})"
        if info.extra is None:
            problem = f"{shows}, but CUDA 12 or later is needed: update the NVIDIA driver"
        elif cupy_gpus is None:
            problem = f"{shows} but CuPy is not installed; install it: {cmd}"
        else:
            problem = (
                f"{shows} but CuPy sees none (is the installed cupy-cudaNNx the one for "
                f"CUDA {info.cuda}?); install the matching one: {cmd}"
            )
        if requested == "cuda":
            return BackendChoice("cpu", problem, error=f'[gpus] backend = "cuda": {problem}')
        return BackendChoice("cpu", problem, warning=f"proving on the CPU backend: {problem}")
    why = "no NVIDIA GPU: nvidia-smi " + ("lists none" if info.present else "is not found")
    if requested == "cuda":
        return BackendChoice(
            "cpu",
            why,
            error=f'[gpus] backend = "cuda": {why}; the CUDA backend needs an NVIDIA GPU, '
            f"its driver and CuPy ({cmd})",
        )
    return BackendChoice("cpu", why)


__all__ = ["Backend", "BackendChoice", "choose_backend", "get_backend", "memory_model"]
