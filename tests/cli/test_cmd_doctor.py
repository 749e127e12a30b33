"""``cuzk doctor`` and ``cuzk kernels`` (issue 35): their output on stand-in hosts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cuzk.backends.cuda import driver
from cuzk.circuits.parameters import parameter_files
from cuzk.cli import cmd_doctor
from cuzk.cli.main import main

H200 = driver.DriverInfo(
    True, "580.95.05", (13, 0), (driver.Gpu(0, "NVIDIA H200", 143771, 143160),)
)


def params_dir(tmp_path: Path) -> Path:
    d = tmp_path / "params"
    d.mkdir()
    porep = next(p for p in parameter_files() if p.circuit_id == "porep-2k")
    (d / porep.params_name).write_bytes(b"x")
    (d / porep.vk_name).write_bytes(b"x")
    return d


def test_doctor_on_a_gpu_host_without_cupy(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_KERNEL_CACHE", str(tmp_path / "kc"))
    (tmp_path / "kc").mkdir()
    (tmp_path / "kc" / "a.cubin").write_bytes(b"\0" * 2048)
    lines = cmd_doctor.doctor_report("auto", [params_dir(tmp_path)], H200, ("not installed", None))
    text = "\n".join(lines)
    assert "driver:          580.95.05 (nvidia-smi)" in text
    assert "CUDA (driver):   13.0; CuPy extra for it: cuda13" in text
    assert "CuPy:            not installed" in text
    assert "  [0] NVIDIA H200: 143,160 MiB free of 143,771 MiB" in text
    assert f"kernel cache:    {tmp_path / 'kc'} (1 files, 0.0 MiB)" in text
    assert "  porep-2k      .params present .vk present" in lines
    assert "  porep-32g     .params missing .vk missing" in lines
    assert 'backend:         cpu ([gpus] backend = "auto"): the driver shows 1 GPU(s)' in text
    assert f"{sys.executable} -m pip install cupy-cuda13x==14.2.0" in lines[-1]
    assert lines[-1].startswith("WARNING:")
    cuda = cmd_doctor.doctor_report("cuda", [tmp_path], H200, ("not installed", None))
    assert cuda[-1].startswith("ERROR:           the daemon would not start")


def test_doctor_without_a_gpu_and_with_one(tmp_path):
    none = cmd_doctor.doctor_report("auto", [tmp_path], driver.DriverInfo(False), ("x", None))
    assert "driver:          none (nvidia-smi is not found or fails)" in none
    assert "GPUs:            none" in none
    assert none[-1].startswith("backend:         cpu") and "nvidia-smi is not found" in none[-1]
    gpu = cmd_doctor.doctor_report("auto", [tmp_path], H200, ("14.2.0 (cupy-cuda13x), sees 1", 1))
    assert gpu[-1] == ('backend:         cuda ([gpus] backend = "auto"): CuPy sees 1 GPU(s) (auto)')


def test_doctor_command_exit_codes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(driver, "run_command", lambda cmd: None)  # no nvidia-smi
    monkeypatch.setitem(sys.modules, "cupy", None)
    cfg = tmp_path / "cuzk.toml"
    cfg.write_text(f'[srs]\nparam_cache = "{tmp_path}"\n[gpus]\nbackend = "cuda"\n')
    assert main(["doctor", "--config", str(cfg)]) == 1
    out = capsys.readouterr().out
    assert "CuPy:            not installed" in out and "ERROR:" in out
    cfg.write_text(f'[srs]\nparam_cache = "{tmp_path}"\n')
    assert main(["doctor", "--config", str(cfg)]) == 0
    assert main(["doctor", "--config", str(tmp_path / "missing.toml")]) == 2


def test_kernels_with_nvcc_builds_every_module_with_progress(tmp_path, capsys):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text(
        f"#!{sys.executable}\nimport sys\nopen(sys.argv[sys.argv.index('-o') + 1], 'w')\n"
    )
    nvcc.chmod(0o755)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{nvcc.parent}:/usr/bin:/bin")
        assert main(["kernels", "--nvcc", str(tmp_path / "cubins")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"building 8 kernel modules for sm_90 with nvcc into {tmp_path / 'cubins'}"
    assert sorted(line.split("]")[0] for line in out[1:9]) == [f"[{i}/8" for i in range(1, 9)]
    assert out[-1] == f"done: set CUZK_KERNEL_PREBUILT={tmp_path / 'cubins'} where the daemon runs"
    assert len(list((tmp_path / "cubins").glob("*.cubin"))) == 8


def test_kernels_without_a_gpu_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(driver, "run_command", lambda cmd: None)
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert main(["kernels"]) == 2
    err = capsys.readouterr().err
    assert "cupy-cuda12x==14.2.0" in err and "--nvcc DIR" in err
