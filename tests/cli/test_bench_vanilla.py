"""cuzk-bench gen-vanilla: Curio's subcommands and flags, vanilla proofs that verify."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.vanilla import read_sector_proof
from cuzk.circuits.post.verify import check_sector_proof
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import UpdateVerifier, read_partition_proof
from cuzk.cli.bench import main
from cuzk.errors import InputError

RND = "ab" * 31 + "0f"


def load(path: Path) -> list[bytes]:
    items = json.loads(path.read_text())
    assert isinstance(items, list) and all(isinstance(x, str) for x in items)
    return [base64.b64decode(x, validate=True) for x in items]


def test_window_post_partition_proofs_verify(tmp_path: Path, capsys) -> None:
    out = tmp_path / "wpost.json"
    argv = ["gen-vanilla", "window-post", "--registered-proof", "10", "--sectors", "2"]
    argv += ["--sector-number", "5", "--randomness", RND, "-o", str(out)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sectors"] == [5, 6] and report["randomness"] == RND
    assert report["submit"].startswith(f"cuzk-bench single -t wpost --vanilla {out} ")
    cfg = config_for_registered_proof(10)
    proofs = [read_sector_proof(b) for b in load(out)]
    assert [p.sector_id for p in proofs] == [5, 6]
    for i, p in enumerate(proofs):
        check_sector_proof(cfg, bytes.fromhex(RND), p, sector_index=i)
        with pytest.raises(InputError):  # they answer this randomness only
            check_sector_proof(cfg, bytes(32), p, sector_index=i)


def test_winning_post_and_curios_defaults(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["gen-vanilla", "winning-post", "--registered-proof", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["out"] == "winning-vanilla.json"  # Curio's default file name
    assert report["submit"].endswith("--sector-size 2KiB")  # 0 is also proto3's "unset"
    (raw,) = load(tmp_path / "winning-vanilla.json")
    proof = read_sector_proof(raw)
    assert proof.sector_id == 1  # Curio's default --sector-number
    check_sector_proof(config_for_registered_proof(0), bytes(32), proof)


def test_snap_prove_partition_proofs_verify(tmp_path: Path, capsys) -> None:
    out = tmp_path / "snap.json"
    assert main(["gen-vanilla", "snap-prove", "--registered-proof", "0", "-o", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    roots = [
        int.from_bytes(bytes.fromhex(report[k]), "little")
        for k in ("comm_r_old", "comm_d_new", "comm_r_new")
    ]
    params = UpdateParams.of("2KiB")
    proofs = load(out)
    assert len(proofs) == params.partition_count == report["proofs"]
    for k, raw in enumerate(proofs):
        UpdateVerifier(params).verify(read_partition_proof(raw), k, params.h_default, *roots)
    assert f"--comm-d-new {report['comm_d_new']}" in report["submit"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["window-post", "--sealed", "/s", "--cache", "/c"], "--sealed, --cache: reading a sealed"),
        (["snap-prove", "--replica", "/r"], "--replica: reading a sealed sector's files"),
        (["window-post", "--registered-proof", "3"], "3 is a winning-post proof type"),
        (["window-post", "--registered-proof", "10", "--sectors", "3"], "holds 1 to 2 sectors"),
        (["winning-post", "--randomness", "abcd"], "--randomness: 2 bytes, expected 32"),
        (["snap-prove", "--registered-proof", "7"], "7 is not a RegisteredUpdateProof"),
    ],
)
def test_refusals_name_the_flag(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    assert main(["gen-vanilla", *argv, "-o", str(tmp_path / "x.json")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
