"""One name per proof kind across the CLIs, the metrics and the circuit ids
(issue 35), the old spellings accepted as aliases; Curio's names kept on its wire."""

from __future__ import annotations

import argparse

import pytest

from cuzk.bench.circuit_bench import post_kind
from cuzk.cli import bench_service
from cuzk.cli._kinds import circuit_kind
from cuzk.cli.cmd_params import circuit_id
from cuzk.engine.jobs import KIND_ALIASES, KIND_NAMES, ProofKind
from cuzk.engine.metrics import CURIO_METRIC_LABELS, CURIO_STATUS_NAMES
from cuzk.errors import InputError


def test_the_names_are_the_labels_and_the_circuit_id_prefixes():
    assert tuple(ProofKind.from_name(n).label for n in KIND_NAMES) == KIND_NAMES
    for alias, name in KIND_ALIASES.items():
        assert ProofKind.from_name(alias).label == name
    for spelling in ("winning_post", "WINNING-POST", " Window_Post "):
        assert ProofKind.from_name(spelling) in (
            ProofKind.WINNING_POST,
            ProofKind.WINDOW_POST_PARTITION,
        )
    # Curio's status names are aliases too, and stay Curio's on its wire
    assert all(ProofKind.from_name(c).label == ours for ours, c in CURIO_STATUS_NAMES.items())
    assert all(ProofKind.from_name(c).label == ours for ours, c in CURIO_METRIC_LABELS.items())
    with pytest.raises(InputError, match="the kinds: porep, snap, wpost, winning, demo"):
        ProofKind.from_name("zk")
    with pytest.raises(InputError):
        ProofKind.from_name("unspecified")


def test_circuit_commands_take_the_names_and_the_old_spellings():
    for name, old in (("winning", "winning-post"), ("wpost", "window-post"), ("porep", "porep")):
        assert circuit_kind(name) == circuit_kind(old)
        prefix = circuit_id(circuit_kind(name), "2KiB").split("-")[0]
        assert prefix == name  # the circuit id begins with the kind's name
    assert post_kind("wpost") == "window-post"
    with pytest.raises(argparse.ArgumentTypeError, match=r"the kinds are wpost, winning$"):
        post_kind("porep")
    with pytest.raises(argparse.ArgumentTypeError, match="the kinds are porep, snap, wpost"):
        circuit_kind("demo")


def test_bench_and_gen_vanilla_take_both(tmp_path, capsys):
    from cuzk.cli.bench import main

    assert bench_service.TYPES["winning_post".replace("_", "-")] == ProofKind.WINNING_POST
    out = tmp_path / "v.json"
    argv = ["gen-vanilla", "winning", "--registered-proof", "0", "-o", str(out)]
    assert main(argv) == 0 and out.exists()
    capsys.readouterr()
    ns = argparse.Namespace(
        type="Winning_Post",
        registered_proof=0,
        sector_num=1,
        miner_id=1000,
        partition=0,
        priority=None,
        sector_size="2KiB",
        vanilla=out,
        randomness=None,
    )
    assert bench_service.build_template(ns).kind == ProofKind.WINNING_POST
