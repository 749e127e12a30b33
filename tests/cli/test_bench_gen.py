from __future__ import annotations

import json

from cuzk.circuits.porep.c1 import load_c1_file
from cuzk.circuits.porep.vanilla import verify_c1
from cuzk.cli.bench import main


def test_gen_c1_writes_a_verifiable_curio_c1_json(tmp_path, capsys):
    out = tmp_path / "c1.json"
    assert main(["gen-c1", "--sector-size", "2KiB", "--out", str(out), "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["proof"] == "StackedDrg2KiBV1_1" and report["bytes"] == out.stat().st_size
    c1, wrapper = load_c1_file(out.read_bytes(), str(out))
    assert wrapper is not None and wrapper.sector_size == 2048 and wrapper.sector_num == 1
    verify_c1(c1)
    # the same seed gives the same file
    again = tmp_path / "again.json"
    assert main(["gen-c1", "--sector-size", "2KiB", "--out", str(again), "--seed", "3"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_gen_c1_sealed_bare_and_errors(tmp_path, capsys):
    out = tmp_path / "c1.json"
    args = ["gen-c1", "--sector-size", "2KiB", "--sealed", "--bare", "--proof", "StackedDrg2KiBV1"]
    assert main([*args, "--out", str(out), "--verify"]) == 0
    c1, wrapper = load_c1_file(out.read_bytes(), str(out))
    assert wrapper is None and c1.registered_proof == "StackedDrg2KiBV1"
    capsys.readouterr()
    assert (
        main(["gen-c1", "--sector-size", "2KiB", "--proof", "StackedDrg8MiBV1", "--out", str(out)])
        == 2
    )
    assert "not a 2KiB proof" in capsys.readouterr().err
