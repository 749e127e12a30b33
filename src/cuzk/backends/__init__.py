"""Where the heavy maths runs: ``cpu`` (the reference) and ``cuda``."""

from __future__ import annotations

from cuzk.backends.base import Backend


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
                raise RuntimeError("the CUDA backend needs an NVIDIA GPU and CuPy")
        from cuzk.backends.cpu import CpuBackend

        return CpuBackend()
    raise ValueError(f"unknown backend {name!r}: expected cpu, cuda or auto")


__all__ = ["Backend", "get_backend"]
