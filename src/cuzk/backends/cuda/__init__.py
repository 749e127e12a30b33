"""The CUDA backend: kernels in ``kernels/*.cu`` loaded through CuPy.

Importing this package does not import CuPy; :func:`cuda_available` says
whether a GPU and CuPy are present.
"""

from __future__ import annotations


def cuda_available() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def cupy_device_count() -> int | None:
    """The GPUs CuPy sees; None when CuPy is not installed."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def __getattr__(name: str):
    if name == "CudaBackend":
        from cuzk.backends.cuda.backend import CudaBackend

        return CudaBackend
    raise AttributeError(name)


__all__ = ["CudaBackend", "cuda_available", "cupy_device_count"]
