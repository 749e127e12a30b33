"""``cuzk circuit-info``: counts in text and JSON, through the cache."""

from __future__ import annotations

import json

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
