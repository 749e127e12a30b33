"""``cuzk circuit-bench``: a PoSt circuit's phases timed, described in words and JSON."""

from __future__ import annotations

import argparse
import json

import pytest

from cuzk.bench.circuit_bench import post_kind
from cuzk.circuits.post.config import WINDOW, WINNING
from cuzk.cli.main import main


def test_circuit_bench_describes_winning_post_as_66_slots(capsys):
    """WinningPoSt's one challenged sector fills 66 one-challenge slots."""
    args = ["circuit-bench", "winning-post", "--sector-size", "2KiB", "--no-r1cs"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 sector in 66 slots of 1 challenge each" in out
    assert "witness, 1 sector (66 slots)" in out
    assert "sector(s)" not in out and "1 sectors" not in out
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["sectors"], report["circuit_slots"], report["challenges_per_slot"]) == (1, 66, 1)


def test_post_kind_takes_post_names_and_refuses_the_others():
    assert post_kind("wpost") == post_kind("window-post") == WINDOW
    assert post_kind("winning") == post_kind("winning-post") == WINNING
    for other in ("porep", "snap", "nonsense"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"the kinds are wpost, winning$"):
            post_kind(other)
