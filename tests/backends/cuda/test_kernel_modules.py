"""Every kernel module the CUDA backend loads, listed from the code that loads
it (cuzk.backends.cuda.kernels), and the prebuild of them all (a stand-in nvcc)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from cuzk.backends.cuda import kernels, loader

CUDA = Path(kernels.__file__).parent


def test_every_module_call_loads_a_listed_file():
    """Each ``.module(...)`` call of the library names its file by a KERNEL_MODULE
    constant (or the probe's ARITH_MODULE), and every such file is prebuilt."""
    listed = {name for name, _ in kernels.PREBUILD_DEFAULT}
    calls, constants = [], set()
    for path in CUDA.parent.parent.rglob("*.py"):
        text = path.read_text()
        calls += [m for m in re.findall(r"\.module\(\s*([^,)]+)", text)]
        constants |= set(re.findall(r'^KERNEL_MODULE = "([^"]+)"', text, re.M))
    allowed = ("KERNEL_MODULE", "FR_MODULE", "name", "*ARITH_MODULE")
    assert calls and all(arg in allowed for arg in calls), calls
    assert (
        constants | {"msm_arith.cu"} == listed == {p.name for p in (CUDA / "kernels").glob("*.cu")}
    )


class _Recorder:
    """A DeviceContext stand-in that records each module an engine loads."""

    def __init__(self) -> None:
        from cuzk.backends.cuda.memory import DeviceBudget

        self.device_id = 0
        self.budget = DeviceBudget(0, 1 << 40)
        self.loaded: list[tuple[str, tuple[str, ...]]] = []

    def module(self, name: str, extra: tuple[str, ...] = ()):
        self.loaded.append((name, tuple(extra)))
        return types.SimpleNamespace(get_function=lambda fn: fn)


def test_the_prebuild_is_exactly_what_the_code_loads(monkeypatch):
    """Every engine and the benchmark's probe, built on a recording context:
    the (module, defines) they load are the prebuild's list, no more, no less."""
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    from cuzk.backends.cuda.fr import FrKernels
    from cuzk.backends.cuda.hpoly import HPoly
    from cuzk.backends.cuda.msm.engine import MsmEngine
    from cuzk.backends.cuda.msm.spec import ARITH_MODULE, G1_SPEC, G2_SPEC
    from cuzk.backends.cuda.ntt import NttEngine
    from cuzk.backends.cuda.spmv import SpmvEngine
    from cuzk.backends.cuda.witness import CudaWitness

    ctx = _Recorder()
    fr = FrKernels(ctx)
    HPoly(NttEngine(ctx))
    for kernel in ("warp", "seg"):
        SpmvEngine(ctx, fr, kernel=kernel)
    CudaWitness(ctx)
    msm = MsmEngine(ctx)
    msm.kernels(G1_SPEC)
    msm.kernels(G2_SPEC)
    ctx.module(*ARITH_MODULE)  # cuzk.bench.msm.fq_mul_rows' load
    assert set(ctx.loaded) == set(kernels.PREBUILD_DEFAULT)
    assert len(kernels.PREBUILD_DEFAULT) == len(set(kernels.PREBUILD_DEFAULT)) == 8


def test_tuning_tables_are_the_only_defines():
    """Every define a kernel module is built with comes from a tuning table,
    and the kernel files hold no default for one (they stop with #error)."""
    from cuzk.backends.cuda import tuning

    tables = (tuning.NTT, tuning.SPMV, tuning.MSM_G1, tuning.MSM_G2)
    emitted = {f for t in tables for f in tuning.flags(t)}
    for _, extra in kernels.PREBUILD_DEFAULT:
        assert set(extra) <= emitted
    for table in tables:
        for name in table:
            for path in (CUDA / "kernels").iterdir():
                text = path.read_text()
                assert f"#define {name} " not in text, (name, path.name)
                assert f"#ifndef {name}" not in text, (name, path.name)


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


def _defines(name: str) -> dict[str, int]:
    text = (CUDA / "kernels" / name).read_text()
    return {
        m.group(1): int(m.group(2), 0)
        for m in re.finditer(r"^#define (\w+) (0x[0-9a-fA-F]+|\d+)u?\b", text, re.M)
    }


def test_flag_and_status_values_match_the_kernels():
    """Values the Python passes to or reads from a kernel (flag bits, modes,
    status codes, sentinels) equal the kernel file's own #defines."""
    from cuzk.backends.cuda import ntt, spmv
    from cuzk.backends.cuda.msm import bases, pipeline

    d = _defines("ntt.cu")
    assert (
        d["NTT_HAS_TWIDDLE"],
        d["NTT_POST_SCALE"],
        d["NTT_PRE_SCALE"],
    ) == (ntt.HAS_TWIDDLE, ntt.POST_SCALE, ntt.PRE_SCALE)
    assert (
        d["NTT_SCALE_CONST"],
        d["NTT_SRC"],
        d["NTT_POST_MUL"],
    ) == (ntt.SCALE_CONST, ntt.SRC, ntt.POST_MUL)
    d = _defines("spmv.cu")
    assert (
        d["SPMV_RAW"],
        d["SPMV_CODE16"],
        d["SPMV_CODE32"],
    ) == (spmv.RAW, spmv.CODE16, spmv.CODE32)
    d = _defines("msm.cu")
    assert d["NO_KEY"] == pipeline.NO_KEY
    assert set(bases._LOAD_PROBLEMS) == {d["LOAD_FLAGS"], d["LOAD_RANGE"], d["LOAD_CURVE"]}
    assert d["LOAD_OK"] == 0


def test_the_device_scripts_compile_check_loads_the_backends_builds(monkeypatch):
    """device_run.sh's NVRTC check loads each file with the defines the backend
    does: a file whose tuning defines are missing stops with #error there."""
    script = (Path(__file__).parent / "device_run.sh").read_text()
    code = script.split("<<'PY'", 1)[1].split("\n", 1)[1].split("\nPY\n", 1)[0]
    loaded = []

    class Module:
        def get_function(self, name):
            return name

    def load_module(name, extra=()):
        loaded.append((name, tuple(extra)))
        return Module()

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(__version__="twin"))
    monkeypatch.setattr(loader, "load_module", load_module)
    exec(compile(code, "device_run.sh", "exec"), {})
    assert loaded and set(loaded) <= set(kernels.backend_modules())
