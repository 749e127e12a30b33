"""``cuzk gen-params`` and ``cuzk params-list``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cuzk.cli.cmd_params as cmd_params
from cuzk.circuits.parameters import file_digest, parameter_file, parameter_files
from cuzk.cli.main import main
from cuzk.errors import InputError
from cuzk.formats.bellperson import open_params, read_vk

WINNING = parameter_file("winning-2k")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUZK_CIRCUIT_CACHE", str(tmp_path / "circuits"))
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)


def test_circuit_ids_of_kinds_and_sizes() -> None:
    assert cmd_params.circuit_id("porep", "32GiB") == "porep-32g"
    assert cmd_params.circuit_id("window-post", 2048) == "wpost-2k"
    assert cmd_params.circuit_id("winning-post", "512MiB") == "winning-512m"
    assert cmd_params.circuit_id("snap", "64GiB") == "snap-64g"
    with pytest.raises(InputError, match="not one of"):
        cmd_params.circuit_id("seal", "2KiB")
    with pytest.raises(InputError, match=r"sizes are 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"):
        cmd_params.circuit_id("porep", "1GiB")


def test_gen_params_writes_the_real_names_and_never_overwrites(tmp_path, capsys) -> None:
    out = tmp_path / "params"
    argv = ["gen-params", "winning-post", "--sector-size", "2KiB", "--out", str(out)]
    assert main([*argv, "--seed", "3", "--backend", "cpu"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([WINNING.params_name, WINNING.vk_name])
    params = open_params(out / WINNING.params_name, out / WINNING.vk_name)
    assert params.vk == read_vk(out / WINNING.vk_name)
    assert params.count("h") + 1 == 1 << 17  # WinningPoSt 2KiB: 90,883 constraints
    assert "INSECURE" in capsys.readouterr().out
    before = (out / WINNING.params_name).read_bytes()
    assert main([*argv, "--seed", "4"]) == 2
    assert "exists; --force replaces development files" in capsys.readouterr().err
    assert (out / WINNING.params_name).read_bytes() == before
    assert main([*argv, "--seed", "4", "--force", "--backend", "cpu"]) == 0
    assert (out / WINNING.params_name).read_bytes() != before


def test_gen_params_never_replaces_filecoins_own_key(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "params"
    argv = ["gen-params", "winning-post", "--sector-size", "2KiB", "--out", str(out)]
    assert main([*argv, "--seed", "3", "--backend", "cpu"]) == 0
    # as if the .vk were Filecoin's published file
    monkeypatch.setattr(cmd_params, "file_digest", lambda p: WINNING.vk_digest)
    assert main([*argv, "--force"]) == 2
    assert "is Filecoin's published key: never replaced" in capsys.readouterr().err


def test_params_list_reports_presence_size_and_digest(tmp_path, capsys) -> None:
    out = tmp_path / "params"
    argv = ["gen-params", "winning-post", "--sector-size", "2KiB", "--out", str(out)]
    assert main([*argv, "--seed", "3", "--backend", "cpu"]) == 0
    capsys.readouterr()
    assert main(["params-list", "--param-cache", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["search_dirs"][0] == str(out)
    assert doc["search_dirs"][-1] == "/var/tmp/filecoin-proof-parameters"
    rows = {r["circuit_id"]: r for r in doc["circuits"]}
    assert set(rows) == {p.circuit_id for p in parameter_files()}
    win = rows["winning-2k"]
    assert win["params"]["path"] == str(out / WINNING.params_name)
    assert win["params"]["bytes"] == (out / WINNING.params_name).stat().st_size
    assert rows["porep-32g"]["params"]["path"] is None
    # --digest: a development file is not Filecoin's (exit 1)
    assert main(["params-list", "--param-cache", str(out), "--json", "--digest"]) == 1
    win = {r["circuit_id"]: r for r in json.loads(capsys.readouterr().out)["circuits"]}[
        "winning-2k"
    ]
    assert win["params"]["digest"] == file_digest(out / WINNING.params_name)
    assert win["params"]["published"] is False and win["vk"]["published"] is False
    assert main(["params-list", "--param-cache", str(out), "--digest"]) == 1
    text = capsys.readouterr().out
    assert "NOT Filecoin's (development or damaged)" in text and "missing" in text


def test_params_list_searches_the_environments_folder(tmp_path, monkeypatch, capsys) -> None:
    fetched = tmp_path / "fetched"
    argv = ["gen-params", "winning-post", "--sector-size", "2KiB", "--out", str(fetched)]
    assert main([*argv, "--seed", "3", "--backend", "cpu"]) == 0
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(fetched))
    capsys.readouterr()
    assert main(["params-list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["search_dirs"][:2] == [str(tmp_path / "home" / "params"), str(fetched)]
    rows = {r["circuit_id"]: r for r in doc["circuits"]}
    assert rows["winning-2k"]["params"]["path"] == str(fetched / WINNING.params_name)
    assert Path(rows["winning-2k"]["vk"]["path"]).name == WINNING.vk_name


def test_load_params_bench_streams_a_file_into_the_cpu_backend(tmp_path, capsys) -> None:
    from cuzk.cli.bench import main as bench

    assert bench(["load-params", "--log", "10", "--backend", "cpu", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["check"] is True
    # h: 2^10 − 1 G1 points, a: 1, b_g1: 2^8 G1, b_g2: 2^8 G2, after the verifying key
    assert report["bytes"] == 288 + 576 + 4 + 96 + 5 * 4 + 96 * (1023 + 1 + 256) + 192 * 256
    assert report["load_warm_gb_s"] > 0 and report["host_peak_anon_mib"] > 0
    # the host's stages alone: the file read (one thread, and split), the decoding
    assert report["read_warm_gb_s"] > 0 and report["read_warm_threads_gb_s"] > 0
    assert report["decode_gb_s"] > 0
    assert list(tmp_path.iterdir()) == []  # the file is removed
