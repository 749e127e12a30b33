"""Client JSON decoded within bounds, in time linear in its length: nesting and
long numbers are found outside strings by one pass, whatever the strings hold
(a regular expression for string literals backtracked quadratically on a quote
followed by escaped quotes: a 64 KiB body held the daemon 13 s)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.circuits import jsondoc
from cuzk.errors import InputError

# strings full of what a scanner could take for structure
_TEXT = st.text(alphabet='"\\[]{}0123456789ab :,\u00e9', max_size=30)
_LEAF = st.one_of(_TEXT, st.integers(-(10**40), 10**40), st.booleans(), st.none())


def _values(depth: int):
    if depth == 0:
        return _LEAF
    inner = _values(depth - 1)
    return st.one_of(_LEAF, st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=3))


def _depth(v) -> int:
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    return 0


def _scan_in_chunks(raw: bytes, chunk: int) -> tuple[int, int]:
    scan = jsondoc._Scan()
    for lo in range(0, len(raw), chunk):
        scan.feed(np.frombuffer(raw, dtype=np.uint8, count=min(chunk, len(raw) - lo), offset=lo))
    return scan.finish()


@settings(max_examples=300, deadline=None)
@given(_values(5), st.sampled_from([1, 2, 3, 7, 64]))
def test_the_scan_sees_the_structure_and_not_the_strings(value, chunk) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode()
    want = (_depth(value), 0)
    assert jsondoc._scan(raw) == want
    assert _scan_in_chunks(raw, chunk) == want  # the state carried between chunks
    assert jsondoc.loads(raw, "test") == value


@pytest.mark.parametrize("chunk", [1, 5, 1 << 22])
def test_a_long_number_is_measured_across_chunks(chunk: int) -> None:
    raw = b'{"a": "' + b"9" * 300 + b'", "b": [' + b"7" * 150 + b"]}"
    assert _scan_in_chunks(raw, chunk) == (2, 150)  # the digits in a string do not count
    assert _scan_in_chunks(b"[" + b"1" * 101 + b"]", chunk) == (1, 101)
    assert _scan_in_chunks(b"1" * 101, chunk) == (0, 101)
    assert _scan_in_chunks(b"[" + b"1" * 100 + b"]", chunk) == (1, 0)
    # an escaped quote does not end a string; an escaped backslash before one does
    assert _scan_in_chunks(b'["\\"[[[", [[]]]', chunk) == (3, 0)
    assert _scan_in_chunks(b'["\\\\", [[]]]', chunk) == (3, 0)


# Shapes that made a pattern backtrack, each about 1 MiB.
MIB = 1 << 20
ADVERSARIAL = {
    "quote then escaped quotes": b'"' + b'\\"' * (MIB // 2),
    "escaped quotes in a value": b'{"x": "' + b'\\"' * (MIB // 2),
    "backslash runs": b'"' + b"\\" * MIB,
    "quotes": b'"' * MIB,
    "brackets": b"[" * MIB,
    "digits": b"1" * MIB,
    "escaped quotes, closed": b'{"x": "' + b'\\"' * (MIB // 2) + b'"}',
}


@pytest.mark.parametrize("shape", list(ADVERSARIAL))
def test_hostile_documents_are_refused_or_read_in_linear_time(shape: str) -> None:
    raw = ADVERSARIAL[shape]
    t = time.perf_counter()
    try:
        jsondoc.loads(raw, "c1.json", "Phase1Out")
    except InputError as e:
        assert "c1.json" in str(e) and "Phase1Out" in str(e)
    # the quadratic pattern took 13 s for 64 KiB of the first shape; the scan
    # reads a MiB in tens of milliseconds: a bound with room for a loaded machine
    assert time.perf_counter() - t < 1.0, shape
