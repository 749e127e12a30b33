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


__all__ = ["Backend", "get_backend", "memory_model"]
