"""The operator's docs name every config key: docs/SERVICE.md's table has a row for each,
and docs/MIGRATING.md says what each is (a Curio key's fate, or one only this daemon has)."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

from cuzk.engine.config import Config

DOCS = Path(__file__).resolve().parents[1] / "docs"


def config_keys() -> list[tuple[str, str]]:
    hints = typing.get_type_hints(Config)
    return [(s.name, f.name) for s in fields(Config) for f in fields(hints[s.name])]


def test_every_config_key_is_documented() -> None:
    service = (DOCS / "SERVICE.md").read_text()
    migrating = (DOCS / "MIGRATING.md").read_text()
    rows = [line for line in service.splitlines() if line.startswith("| `[")]
    missing = []
    for section, key in config_keys():
        in_table = any(
            row.startswith(f"| `[{section}] ")
            and (f"`[{section}] {key}`" in row or f"`{key}`" in row.split("|")[1])
            for row in rows
        )
        if not in_table or (f"`{key}`" not in migrating and f"] {key}`" not in migrating):
            missing.append(f"[{section}] {key}")
    assert not missing, missing
