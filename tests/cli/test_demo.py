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
    assert re.search(r"daemon stopped \(exit 0\); demo-service took \d+\.\ds", out)
