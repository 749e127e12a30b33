"""native/mont_x86.h is generated: regenerating it gives the committed file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_mont_x86.py"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_mont_x86", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_header_is_the_generated_one() -> None:
    gen = _generator()
    assert gen.HEADER.read_text() == gen.generate()
    assert gen.main(["--check"]) == 0


def test_check_fails_on_a_stale_header(tmp_path, monkeypatch, capsys) -> None:
    gen = _generator()
    stale = tmp_path / "mont_x86.h"
    stale.write_text(gen.generate().replace("adcxq", "adcq", 1))
    monkeypatch.setattr(gen, "HEADER", stale)
    assert gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert gen.main([]) == 0 and stale.read_text() == gen.generate()
