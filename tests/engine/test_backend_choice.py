"""The backend a host gets and why, said loudly (issue 35), and the kernels
loaded before the engine starts: stand-ins for nvidia-smi and CuPy."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from test_devices import fake_cupy, stand_in_gpu

import cuzk.engine.devices as devices
from cuzk.backends import choose_backend
from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda import driver
from cuzk.engine.config import Config, GpusConfig
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine

H200 = driver.DriverInfo(
    True, "580.95.05", (13, 0), (driver.Gpu(0, "NVIDIA H200", 143771, 143000),)
)
NO_DRIVER = driver.DriverInfo(False)
PIP13 = f"{sys.executable} -m pip install cupy-cuda13x==14.2.0 nvidia-ml-py==13.615.71"


def smi(info: driver.DriverInfo):
    """A stand-in nvidia-smi showing ``info``."""
    header = f"Driver Version: {info.driver_version}   CUDA Version: {info.cuda}"
    listing = "".join(f"{g.index}, {g.name}, {g.total_mib}, {g.free_mib}\n" for g in info.gpus)

    def run(cmd):
        if not info.present:
            return None
        return listing if any(a.startswith("--query-gpu") for a in cmd) else header

    return run


def test_no_gpu_proves_on_the_cpu_quietly():
    auto = choose_backend("auto", cupy_gpus=None, driver=NO_DRIVER)
    assert (auto.name, auto.warning, auto.error) == ("cpu", None, None)
    assert "nvidia-smi is not found" in auto.reason
    cuda = choose_backend("cuda", cupy_gpus=None, driver=NO_DRIVER)
    assert "cupy-cuda12x==14.2.0" in cuda.error and "cupy-cuda13x==14.2.0" in cuda.error
    assert choose_backend("cpu", cupy_gpus=3, driver=H200).name == "cpu"


def test_a_gpu_without_cupy_warns_with_the_pip_command():
    auto = choose_backend("auto", cupy_gpus=None, driver=H200)
    assert auto.name == "cpu" and auto.error is None
    assert "NVIDIA H200" in auto.warning and "CUDA 13.0" in auto.warning
    assert auto.warning.endswith(PIP13)
    cuda = choose_backend("cuda", cupy_gpus=None, driver=H200)
    assert cuda.error.startswith('[gpus] backend = "cuda"') and cuda.error.endswith(PIP13)
    wrong = choose_backend("auto", cupy_gpus=0, driver=H200)  # CuPy of another CUDA
    assert "CuPy sees none" in wrong.warning and wrong.warning.endswith(PIP13)


def test_a_gpu_with_cupy_proves_on_it():
    for requested in ("auto", "cuda"):
        c = choose_backend(requested, cupy_gpus=2, driver=NO_DRIVER)
        assert (c.name, c.warning, c.error) == ("cuda", None, None)
        assert "CuPy sees 2 GPU(s)" in c.reason


def test_discover_on_the_three_hosts(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="cuzk.engine.devices")
    # no GPU: the CPU, said at INFO only
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.setattr(driver, "run_command", smi(NO_DRIVER))
    (cpu,) = devices.discover(GpusConfig(backend="auto"))
    assert cpu.name == "cpu" and not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("backend: cpu (no NVIDIA GPU" in r.getMessage() for r in caplog.records)
    # a GPU without CuPy: the CPU, with a WARNING naming the command; "cuda" refuses
    caplog.clear()
    monkeypatch.setattr(driver, "run_command", smi(H200))
    (cpu,) = devices.discover(GpusConfig(backend="auto", devices=(0,)))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert cpu.name == "cpu" and any(w.endswith(PIP13) for w in warnings)
    assert any("[gpus] devices [0] is ignored" in w for w in warnings)
    with pytest.raises(RuntimeError, match=r"cupy-cuda13x==14\.2\.0"):
        devices.discover(GpusConfig(backend="cuda"))
    # a GPU with CuPy: the GPU
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(1))
    monkeypatch.setattr(devices, "_open_gpu", stand_in_gpu)
    (gpu,) = devices.discover(GpusConfig(backend="auto"))
    assert gpu.name == "Fake H200 #0"


class KernelBackend(CpuBackend):
    """A CPU backend with kernels to load, as the CUDA backend has."""

    compiles_kernels = True

    def __init__(self, seen: list) -> None:
        super().__init__()
        self.seen = seen

    def load_kernels(self, progress=None) -> None:
        self.seen.append("load_kernels")
        if progress is not None:
            progress(1, 1, "ntt.cu", 0.25)


def test_the_engine_loads_every_kernel_before_it_starts(tmp_path: Path, caplog):
    caplog.set_level(logging.INFO, logger="cuzk.engine.devices")
    seen: list = []
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
    )
    e = Engine(cfg, devices=[Device(0, "fake GPU", KernelBackend(seen), 0, None)])
    real_start = e.pipeline.start
    e.pipeline.start = lambda: (seen.append("pipeline"), real_start())[-1]
    e.start()
    try:
        assert seen == ["load_kernels", "pipeline"]
        text = "\n".join(r.getMessage() for r in caplog.records)
        assert "kernels: loading every kernel module on cpu:0 before reporting ready" in text
        assert "kernels: cpu:0 [1/1] ntt.cu: 0.2 s" in text and "kernels: ready in" in text
    finally:
        e.stop()


def test_a_kernel_that_does_not_load_stops_the_start(tmp_path: Path):
    class Broken(KernelBackend):
        def load_kernels(self, progress=None) -> None:
            raise OSError("nvrtc: error: something")

    with pytest.raises(RuntimeError, match=r"kernels: cannot load the kernels on cpu:0"):
        devices.prepare_kernels([Device(0, "x", Broken([]), 0, None)])
    assert devices.prepare_kernels([Device(0, "cpu", CpuBackend(), 0, None)]) == 0.0


def test_the_daemon_exits_2_naming_the_command_for_cuda_without_cupy(
    tmp_path: Path, monkeypatch, caplog
):
    from cuzk.service.daemon_main import run

    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(driver, "run_command", smi(H200))
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": [f"unix://{tmp_path}/s"]},
        srs={"param_cache": str(tmp_path / "params")},
        gpus={"backend": "cuda"},
        memory={"total_budget": "1GiB"},
    )
    with caplog.at_level(logging.INFO):
        assert run(cfg, "cuzk.toml") == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].endswith(PIP13), errors
    assert "cannot start the engine" in errors[0] and "ready" not in caplog.text
