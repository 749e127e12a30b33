"""The demo module: ``cuzk demo`` and ``cuzk-bench demo-service`` (make demo)."""

import re

import pytest

from cuzk.cli import bench
from cuzk.cli.main import main


def test_demo_command_proves_and_verifies(capsys):
    assert main(["demo", "--constraints", "600", "--proofs", "2", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("verified (") == 2
    assert "batch of 2 verified" in out


@pytest.mark.slow
def test_demo_service_is_the_readme_main_job(capsys) -> None:
    rc = bench.main(["demo-service", "-c", "4", "-j", "2", "--constraints", "600"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "daemon ready" in out and "completed:     4" in out
    assert "(device: cpu)" in out and "  daemon: backend: cpu (" in out
    assert re.search(
        r"stages \(avg\):  queue=\d+ ms, key load=\d+ ms, synthesis=\d+ ms, "
        r"prove=\d+ ms, total=\d+ ms",
        out,
    )
    assert re.search(r"daemon stopped \(exit 0\); demo-service took \d+\.\ds", out)


def test_demo_service_says_the_daemons_backend_and_kernels(tmp_path):
    from cuzk.cli.cmd_demo import daemon_log_summary

    log = tmp_path / "daemon.log"
    log.write_text(
        "2026-12-04 10:00:00,001 INFO cuzk.service.daemon_main: config: none\n"
        "2026-12-04 10:00:00,002 WARNING cuzk.engine.devices: proving on the CPU backend: "
        "the driver shows 1 GPU(s) (NVIDIA H200; CUDA 13.0) but CuPy is not installed; "
        "install it: py -m pip install cupy-cuda13x==14.2.0 nvidia-ml-py==13.615.71\n"
        "2026-12-04 10:00:00,003 INFO cuzk.engine.devices: backend: cuda (CuPy sees 1 GPU(s))\n"
        "2026-12-04 10:00:00,004 INFO cuzk.engine.devices: kernels: loading every CUDA kernel\n"
        "2026-12-04 10:00:00,005 INFO cuzk.engine.devices: kernels: cuda:0 [1/7] fr_ops.cu: 1 s\n"
        "2026-12-04 10:00:09,000 INFO cuzk.engine.devices: kernels: ready in 9.0 s\n"
    )
    assert daemon_log_summary(log).splitlines() == [
        "  daemon: WARNING: proving on the CPU backend: the driver shows 1 GPU(s) (NVIDIA H200; "
        "CUDA 13.0) but CuPy is not installed; install it: py -m pip install "
        "cupy-cuda13x==14.2.0 nvidia-ml-py==13.615.71",
        "  daemon: backend: cuda (CuPy sees 1 GPU(s))",
        "  daemon: kernels: loading every CUDA kernel",
        "  daemon: kernels: ready in 9.0 s",
    ]
    tail = daemon_log_summary(log, tail=True)
    assert "config: none" in tail and "[1/7] fr_ops.cu" in tail
    assert daemon_log_summary(tmp_path / "none.log") == f"(no log at {tmp_path / 'none.log'})"
