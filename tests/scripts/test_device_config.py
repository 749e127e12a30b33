"""scripts/device-config.sh: the one daemon config of the device calls parses
as a Config with what each call asks for (the calls run only on the GPU
machine, so a broken config would cost a device call to find)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.engine.config import load_config

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device-config.sh"


def _write(tmp_path: Path, args: list[str], **env: str) -> Path:
    out = tmp_path / "cuzk.toml"
    subprocess.run(
        ["bash", "-c", f'source "{SCRIPT}" && daemon_config "$@"', "sh", str(out), *args],
        check=True,
        env={"PATH": os.environ["PATH"], **env},
    )
    return out


pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def test_single_and_kinds_calls(tmp_path):
    args = ["unix:///tmp/h/cuzk.sock", "/tmp/h/journal.sqlite", "/tmp/h/params", "110GiB", "0"]
    path = _write(tmp_path, args)
    cfg = load_config(path)
    assert cfg.daemon.listen == ("unix:///tmp/h/cuzk.sock",)
    assert cfg.daemon.status_listen == "127.0.0.1:9821"
    assert cfg.gpus.backend == "cuda" and cfg.gpus.vram_budget == ""
    assert cfg.pipeline.synthesis_processes == 0 and cfg.pipeline.synthesis_concurrency == 1
    assert cfg.srs.param_cache == "/tmp/h/params" and cfg.srs.generate_dev_keys


def test_capped_multigpu_call(tmp_path):
    path = _write(
        tmp_path,
        ["unix:///tmp/m/a.sock", "/tmp/m/a-journal.sqlite", "/dev/shm/params", "100GiB", "16"],
        CUZK_VRAM_BUDGET="16GiB",
        GPUS_EXTRA="devices = [0, 1]\ngpu_workers_per_device = 2",
        PIPELINE_EXTRA="synthesis_lookahead = 1",
        http="127.0.0.1:9900",
    )
    cfg = load_config(path)
    assert cfg.gpus.vram_budget == "16GiB"
    assert cfg.gpus.devices == (0, 1) and cfg.gpus.gpu_workers_per_device == 2
    assert cfg.pipeline.synthesis_processes == 16 and cfg.pipeline.synthesis_lookahead == 1
    assert cfg.daemon.status_listen == "127.0.0.1:9900"
    assert cfg.memory.total_budget == "100GiB"
