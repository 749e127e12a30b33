"""The benchmarks' tests reuse the CUDA backend tests' CPU twins (numpy
stand-in for CuPy, kernels compiled for the host): tests/backends/cuda."""

from __future__ import annotations

import sys
from pathlib import Path

CUDA_TESTS = Path(__file__).resolve().parents[1] / "backends" / "cuda"
if str(CUDA_TESTS) not in sys.path:
    sys.path.insert(0, str(CUDA_TESTS))

from host_twin import host_kernels  # noqa: E402, F401 (a fixture)
