"""The environment variables: one table (cuzk.environment.VARIABLES, shown by
docs/ENVIRONMENT.md), read through one module, bad values as InputErrors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cuzk import environment
from cuzk.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "cuzk"
READ = re.compile(r"os\.environ\.get\(|os\.environ\[|os\.getenv\(")


def test_the_documented_table_is_the_variables() -> None:
    text = (ROOT / "docs" / "ENVIRONMENT.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \| (.*) \| (.*) \|$", text, re.MULTILINE)
    assert rows == [(v.name, v.default, v.meaning) for v in environment.VARIABLES]


def test_backends_and_circuits_read_the_environment_through_one_module() -> None:
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for layer in ("backends", "circuits", "groth16", "formats", "hashers", "gadgets")
        for path in sorted((SRC / layer).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if READ.search(line)
    ]
    assert found == []


def test_every_variable_the_package_names_is_in_the_table() -> None:
    named = set()
    for path in SRC.rglob("*.py"):
        for line in path.read_text().splitlines():
            if "environ" in line or "getenv" in line:
                named |= set(re.findall(r"[\"']((?:CUZK|FIL)_[A-Z_]+)[\"']", line))
    config = (SRC / "engine" / "config.py").read_text()
    named |= set(re.findall(r"_ENV = \"([A-Z_]+)\"", config))
    assert "CUZK_HOME" in named and "FIL_PROOFS_PARAMETER_CACHE" in named
    assert named <= environment.NAMES, named - environment.NAMES


def test_values_are_parsed(monkeypatch) -> None:
    for name in ("CUZK_CPU_NATIVE", "CUZK_THREADS", "CUZK_NATIVE_ARITH", "CUZK_CIRCUIT_CACHE"):
        monkeypatch.delenv(name, raising=False)
    assert environment.cpu_native() and environment.threads() is None
    assert not environment.portable_arithmetic() and environment.circuit_cache() is None
    monkeypatch.setenv("CUZK_CPU_NATIVE", "0")
    monkeypatch.setenv("CUZK_THREADS", "3")
    monkeypatch.setenv("CUZK_NATIVE_ARITH", "portable")
    monkeypatch.setenv("CUZK_CIRCUIT_CACHE", "/tmp/c")
    assert not environment.cpu_native() and environment.threads() == 3
    assert environment.portable_arithmetic() and environment.circuit_cache() == Path("/tmp/c")
    monkeypatch.setenv("CUZK_THREADS", "0")
    assert environment.threads() == 1  # as before: at least one thread


@pytest.mark.parametrize(
    ("name", "value", "reader"),
    [
        ("CUZK_CPU_NATIVE", "false", environment.cpu_native),
        ("CUZK_THREADS", "many", environment.threads),
        ("CUZK_NATIVE_ARITH", "fast", environment.portable_arithmetic),
    ],
)
def test_a_bad_value_is_an_input_error_naming_the_variable(monkeypatch, name, value, reader):
    monkeypatch.setenv(name, value)
    with pytest.raises(InputError) as e:
        reader()
    assert e.value.field == name and repr(value) in str(e.value) and "takes" in str(e.value)
