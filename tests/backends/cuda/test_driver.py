"""The driver as nvidia-smi shows it, the extra a host needs, and make demo's
GPU step, with stand-ins for nvidia-smi (no GPU needed)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from cuzk.backends.cuda import driver

ROOT = Path(__file__).resolve().parents[3]

HEADER_13 = """
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
"""
HEADER_12 = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |"
HEADER_11 = "| NVIDIA-SMI 470.82.01   Driver Version: 470.82.01   CUDA Version: 11.4 |"
LISTING = "0, NVIDIA H200, 143771, 143160\n1, NVIDIA H200, 143771, 140000\n"


def runner(header: str | None, listing: str = LISTING):
    def run(cmd: list[str]) -> str | None:
        if header is None:
            return None
        return listing if any(a.startswith("--query-gpu") for a in cmd) else header

    return run


def test_pyproject_extras_are_the_pins_of_the_module():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for name, pins in driver.EXTRAS.items():
        assert tuple(extras[name]) == pins
    assert {"cupy-cuda12x", "cupy-cuda13x"} == {
        p.split("==")[0] for pins in driver.EXTRAS.values() for p in pins if "cupy" in p
    }
    assert all(re.fullmatch(r"[a-z0-9-]+==[0-9.]+", p) for ps in driver.EXTRAS.values() for p in ps)


def test_probe_reads_versions_and_gpus():
    info = driver.probe(runner(HEADER_13))
    assert info.present and info.has_gpu
    assert info.driver_version == "580.95.05" and info.cuda == "13.0"
    assert info.extra == "cuda13"
    assert info.gpus[1] == driver.Gpu(1, "NVIDIA H200", 143771, 140000)
    assert driver.probe(runner(HEADER_12)).extra == "cuda12"
    assert driver.probe(runner(HEADER_11)).extra is None  # too old for CuPy 14


def test_probe_without_a_driver_or_a_gpu():
    info = driver.probe(runner(None))
    assert not info.present and not info.has_gpu and info.extra is None and info.cuda == "unknown"
    empty = driver.probe(runner(HEADER_13, listing="garbage line\n"))
    assert empty.present and not empty.has_gpu


def test_pip_command_names_the_pins():
    cmd = driver.pip_command("cuda13", "/venv/bin/python")
    assert cmd == "/venv/bin/python -m pip install cupy-cuda13x==14.2.0 nvidia-ml-py==13.615.71"
    both = driver.pip_command(None, "py")
    assert "cupy-cuda12x==14.2.0" in both and "cupy-cuda13x==14.2.0" in both


def _ensure(header, has_cupy, install_rc=0):
    ran, said = [], []

    def install(cmd):
        ran.append(cmd)
        return install_rc

    rc = driver.ensure(driver.probe(runner(header)), has_cupy, install, said.append, "py")
    return rc, ran, said


def test_ensure_installs_the_drivers_extra_on_a_gpu_host_without_cupy():
    rc, ran, said = _ensure(HEADER_12, has_cupy=False)
    assert rc == 0
    assert ran == [["py", "-m", "pip", "install", "--quiet", *driver.EXTRAS["cuda12"]]]
    assert "cuda12" in said[0] and "NVIDIA H200" in said[0]


def test_ensure_does_nothing_without_a_gpu_or_with_cupy():
    assert _ensure(None, has_cupy=False) == (0, [], [])
    assert _ensure(HEADER_13, has_cupy=True) == (0, [], [])


def test_ensure_says_a_failed_install_and_an_old_driver():
    rc, ran, said = _ensure(HEADER_13, has_cupy=False, install_rc=1)
    assert rc == 0 and len(ran) == 1
    assert "WARNING" in said[-1] and "py -m pip install cupy-cuda13x==14.2.0" in said[-1]
    rc, ran, said = _ensure(HEADER_11, has_cupy=False)
    assert ran == [] and "update the NVIDIA driver" in said[0]


def test_the_script_runs_with_the_standard_library_alone(tmp_path):
    """make runs it before .venv exists: a stand-in nvidia-smi on PATH."""
    import subprocess

    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\ncase \"$1\" in --query-gpu*) printf '0, NVIDIA H200, 143771, 143000\\n';; "
        f"*) echo '{HEADER_12.strip()}';; esac\n"
    )
    smi.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    script = ROOT / "src" / "cuzk" / "backends" / "cuda" / "driver.py"
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(script), "extra"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout == "cuda12\n"
    env["PATH"] = "/nonexistent"
    # as make runs it (its folder first on sys.path): no module there shadows the stdlib
    out = subprocess.run(
        [sys.executable, str(script), "extra"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout == ""


def test_makefile_keeps_the_test_tools_out_of_the_demo():
    make = (ROOT / "Makefile").read_text()
    main = make[make.index("$(BIN)/cuzk:") : make.index("\n\n", make.index("$(BIN)/cuzk:"))]
    assert "-e ." in main and "[test]" not in main
    assert re.search(r"^demo: gpu-extra$", make, re.M)
    assert re.search(r"^gpu-extra: \$\(BIN\)/cuzk$", make, re.M)
    assert re.search(r"^test: \$\(VENV\)/\.test-extra ", make, re.M)
    assert "driver.py ensure" in make
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make test")
