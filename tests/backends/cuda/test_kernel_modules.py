"""Every kernel module the CUDA backend loads, listed from the code that loads
it (cuzk.backends.cuda.kernels), and the prebuild of them all (a stand-in nvcc)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from cuzk.backends.cuda import kernels, loader

CUDA = Path(kernels.__file__).parent


def test_every_module_call_loads_a_listed_file():
    """Each ``.module(...)`` call of the backend names its file by a KERNEL_MODULE
    constant, and every such constant is in backend_modules()."""
    listed = {name for name, _ in kernels.backend_modules()}
    calls, constants = [], set()
    for path in CUDA.rglob("*.py"):
        text = path.read_text()
        calls += [(path.name, m) for m in re.findall(r"\.module\(\s*([^,)]+)", text)]
        constants |= set(re.findall(r'^KERNEL_MODULE = "([^"]+)"', text, re.M))
    assert calls and all(arg in ("KERNEL_MODULE", "FR_MODULE", "name") for _, arg in calls), calls
    assert (
        constants
        == listed
        == {p.name for p in (CUDA / "kernels").glob("*.cu")}
        - {
            "msm_arith.cu"  # the MSM benchmark's arithmetic alone
        }
    )


def test_backend_modules_are_the_default_builds_and_both_groups():
    mods = kernels.backend_modules()
    assert len(mods) == len(set(mods)) == 7
    assert ("msm.cu", ()) in mods and ("msm.cu", ("-DCUZK_G2",)) in mods
    assert all(extra == () for name, extra in mods if name != "msm.cu")
    every = kernels.all_modules(variants=True)
    assert every[: len(mods)] == mods and len(every) == len(set(every)) == 18
    assert set(kernels.PREBUILD_DEFAULT) == set(every)


def test_prebuild_builds_each_once_with_progress(tmp_path):
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(
        f"#!{sys.executable}\nimport sys\nout = sys.argv[sys.argv.index('-o') + 1]\n"
        "open(out, 'w').write(' '.join(sys.argv[1:]))\n"
    )
    nvcc.chmod(0o755)
    seen = []
    items = [*kernels.backend_modules(), ("fr_ops.cu", ())]  # a repeat is built once
    paths = kernels.prebuild(
        tmp_path / "out", items, "90", nvcc=str(nvcc), jobs=2, progress=lambda *a: seen.append(a)
    )
    assert len(paths) == len(set(paths)) == 7 and all(p.exists() for p in paths)
    assert sorted(s[0] for s in seen) == list(range(1, 8)) and {s[1] for s in seen} == {7}
    assert all(s[4] is not None for s in seen)
    assert (
        "-DCUZK_G2"
        in next(p for p in paths if "msm" in p.name and "G2" in p.read_text()).read_text()
    )
    again = []
    kernels.prebuild(
        tmp_path / "out", items, "90", nvcc=str(nvcc), progress=lambda *a: again.append(a)
    )
    assert {s[4] for s in again} == {None}  # present: nothing rebuilt


def test_the_kernel_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("CUZK_KERNEL_CACHE", str(tmp_path / "k"))
    assert loader.kernel_cache_dir() == tmp_path / "k"
    monkeypatch.delenv("CUZK_KERNEL_CACHE")
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "c"))
    assert loader.kernel_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("CUPY_CACHE_DIR")
    assert loader.kernel_cache_dir() == Path.home() / ".cupy" / "kernel_cache"


@pytest.mark.gpu
def test_after_load_kernels_a_proof_loads_nothing_new():
    """On the GPU: the backend's load_kernels leaves nothing for its engines to
    load (the MSM of both groups, the witness kernels, the H polynomial)."""
    from cuzk.backends.cuda.backend import CudaBackend
    from cuzk.backends.cuda.msm.spec import G1_SPEC, G2_SPEC
    from cuzk.backends.cuda.witness import CudaWitness

    be = CudaBackend()
    seen = []
    be.load_kernels(lambda *a: seen.append(a))
    assert [s[2] for s in seen] == [loader.describe(*m) for m in kernels.backend_modules()]
    before = loader.load_module.cache_info().currsize
    from cuzk.backends.cuda.msm.engine import MsmEngine

    msm = MsmEngine(be.ctx)
    msm.kernels(G1_SPEC)
    msm.kernels(G2_SPEC)
    CudaWitness(be.ctx)
    assert loader.load_module.cache_info().currsize == before
