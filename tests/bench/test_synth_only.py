"""``cuzk-bench synth-only`` (Curio's) and the Rust bench's commands refused here."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cuzk.cli.bench import main as bench


def c1_file(tmp_path: Path) -> Path:
    from cuzk.circuits.porep import synthetic
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.types import C1Wrapper

    proof = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    c1 = synthetic.generate_c1(proof, random.Random(3), 1000, 1)
    path = tmp_path / "c1.json"
    path.write_bytes(dumps_wrapper(C1Wrapper(1, dumps_c1(c1), 2048)))
    return path


@pytest.mark.slow  # two 2KiB syntheses: seconds on two cores
def test_synth_only_times_a_c1s_partitions(tmp_path: Path, capsys) -> None:
    path = c1_file(tmp_path)
    argv = ["synth-only", "--c1", str(path), "--partition", "0", "-i", "2", "--json"]
    assert bench(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("iteration 1/2: 1 partition(s) of porep-2k synthesized in ")
    assert out[1].startswith("iteration 2/2: ")
    summary = json.loads(out[2])
    assert summary["circuit_id"] == "porep-2k" and summary["partitions"] == [0]
    assert len(summary["synthesis_seconds"]) == 2 and all(
        t > 0 for t in summary["synthesis_seconds"]
    )


def test_synth_only_refuses_what_it_cannot_do_with_the_flag(tmp_path: Path, capsys) -> None:
    assert bench(["synth-only", "--c1", str(tmp_path / "none.json")]) == 2
    assert f"--c1 {tmp_path / 'none.json'}: No such file" in capsys.readouterr().err
    path = c1_file(tmp_path)
    assert bench(["synth-only", "--c1", str(path), "--partition", "7"]) == 2
    assert "--partition 7: this C1 has 1 partition(s), numbered from 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rust", "ours"),
    [
        ("pce-bench", "cuzk-bench circuit-witness porep"),
        ("pce-pipeline", "cuzk-bench prove-c1 --c1 FILE"),
        ("slotted-bench", "there are no slots"),
    ],
)
def test_the_rust_benchs_internals_are_refused_naming_ours(rust: str, ours: str, capsys) -> None:
    # Curio's flags are taken, so that the refusal, not a usage error, is what is said.
    assert bench([rust, "--c1", "/data/c1.json", "--slot-sizes", "1,2", "-n", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cuzk-bench {rust}: Curio's Rust bench ") and ours in err
