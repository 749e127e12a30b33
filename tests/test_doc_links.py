"""Comments cite measurements by links to named sections of the device notes
(docs/device-notes/*.md#section), not by run labels: every such link resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"docs/device-notes/([\w-]+\.md)#([\w-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_device_note_link_names_a_section() -> None:
    sections = {
        md.name: {slug(line.lstrip("#")) for line in md.read_text().splitlines() if line[:1] == "#"}
        for md in (ROOT / "docs" / "device-notes").glob("*.md")
    }
    links, broken = 0, []
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix not in (".py", ".cu", ".cuh", ".h", ".c"):
            continue
        for m in LINK.finditer(path.read_text()):
            links += 1
            if m.group(2) not in sections.get(m.group(1), ()):
                broken.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert links >= 8 and not broken, broken


def test_slug_follows_github() -> None:
    assert (
        slug(" Call 3 (2026-11-30, 165 s of device time)")
        == "call-3-2026-11-30-165-s-of-device-time"
    )
    assert slug("Version 2 as built (before its device call)") == (
        "version-2-as-built-before-its-device-call"
    )


RUN_NAMED = re.compile(r"\d{4}-\d\d-\d\d|^call-\d|^v\d+$|^version-\d")


def test_device_note_links_name_topics_not_runs() -> None:
    """Code links topic sections (tuning-table, field-product, ...), not a
    dated run or a version's log (those live under docs/device-notes/runs/)."""
    run_named = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in sorted((ROOT / "src").rglob("*"))
        if path.suffix in (".py", ".cu", ".cuh", ".h", ".c")
        for m in LINK.finditer(path.read_text())
        if RUN_NAMED.search(m.group(2))
    ]
    assert not run_named, run_named
    assert RUN_NAMED.search("call-3-2026-11-30-165-s-of-device-time")
    assert not RUN_NAMED.search("tuning-table")
