"""``cuzk circuit-info``: counts in text and JSON, through the cache."""

from __future__ import annotations

import json

import pytest

from cuzk.cli.main import main


def test_circuit_info_json_and_text(tmp_path, capsys):
    args = ["circuit-info", "window-post", "--sector-size", "2KiB", "--cache-dir", str(tmp_path)]
    assert main([*args, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["circuit"] == "window-post/2KiB"
    assert info["constraints"] == 21_889
    assert info["public_inputs"] == 22
    assert info["aux_variables"] == 22_128
    assert info["fft_domain"] == 1 << 15
    assert info["nnz"] == {"a": 150_285, "b": 22_230, "c": 27_456}
    assert any(p.suffix == ".npz" for p in tmp_path.iterdir())  # cached
    assert main(args) == 0  # now from the cache
    out = capsys.readouterr().out
    assert "21,889" in out and "2^15" in out


def test_circuit_info_rejects_unknown_sizes(tmp_path, capsys):
    rc = main(["circuit-info", "winning-post", "--sector-size", "3GiB", "--no-cache"])
    assert rc == 2
    assert "not a Filecoin sector size" in capsys.readouterr().out


def _info(capsys, *args: str) -> dict:
    assert main(["circuit-info", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_circuit_info_porep_and_snap_2kib(tmp_path, capsys):
    cache = ["--cache-dir", str(tmp_path)]
    info = _info(capsys, "porep", "--sector-size", "2KiB", *cache)
    assert info["circuit"] == "porep-2KiB"
    assert (info["constraints"], info["inputs_with_one"], info["aux_variables"]) == (
        2_687_961,
        40,
        2_685_673,
    )
    assert info["fft_domain"] == 1 << 22
    assert info["nnz"] == {"a": 6_421_005, "b": 2_689_006, "c": 5_824_682}
    info = _info(capsys, "snap", "--sector-size", "2KiB", *cache)
    assert info["circuit"] == "snap-2KiB"
    assert (info["constraints"], info["circuit_constraints"], info["public_inputs"]) == (
        1_705_044,
        1_705_039,
        4,
    )
    assert main(["circuit-info", "porep", "--sector-size", "2KiB", *cache]) == 0
    out = capsys.readouterr().out
    assert "2,687,961" in out and "2^22" in out and "39 (+ ONE = 40" in out


@pytest.mark.slow
def test_circuit_info_porep_and_snap_32gib(capsys):
    """The issue's figures, from the templates alone (~8 s; no matrices are built).

    PoRep: a.len() 130,278,869 with 328 inputs (ONE included), and the
    non-zeros of Curio's PCE extraction; SnapDeals: storage-proofs-update's
    81,049,499 plus its 5 input constraints.
    """
    info = _info(capsys, "porep", "--sector-size", "32GiB", "--no-cache")
    assert (info["constraints"], info["inputs_with_one"], info["aux_variables"]) == (
        130_278_869,
        328,
        130_169_893,
    )
    assert info["nnz"] == {"a": 309_405_051, "b": 130_327_340, "c": 282_656_500}
    assert info["fft_domain_log2"] == 27
    info = _info(capsys, "snap", "--sector-size", "32GiB", "--no-cache")
    assert (info["constraints"], info["circuit_constraints"], info["inputs_with_one"]) == (
        81_049_504,
        81_049_499,
        5,
    )


def test_circuit_info_porep_rejects_sizes_and_kinds(capsys):
    assert main(["circuit-info", "porep", "--sector-size", "abc", "--no-cache"]) == 2
    assert "not a size like 32GiB" in capsys.readouterr().out
    assert main(["circuit-info", "snap", "--sector-size", "3GiB", "--no-cache"]) == 2
    assert "not a Filecoin sector size" in capsys.readouterr().out
