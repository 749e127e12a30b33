"""JSON documents from clients, decoded within bounds.

Every JSON input a request can carry (the demo kind's body, Curio's c1.json
and its Phase1Out, SnapDeals' proof container) goes through :func:`loads`,
which turns every way a document can be hostile into an InputError naming
the source and field: bytes that are not UTF-8, text that is not JSON,
nesting deeper than :data:`MAX_DEPTH` (Python's decoder would recurse until
it hits the interpreter's limit), integers longer than :data:`MAX_DIGITS`
digits (Python refuses to convert more than 4300 digits, with a ValueError),
and NaN or Infinity, which JSON does not have.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from cuzk.errors import InputError

# The formats read here nest a dozen levels at most (a c1.json's Merkle paths);
# 64 leaves room and keeps the decoder far from the interpreter's recursion limit.
MAX_DEPTH = 64
# The longest integer any of them carries is a field element in decimal (78 digits).
MAX_DIGITS = 100

# A string literal as an "unrolled loop" (runs of plain characters matched at
# once, escapes one by one): ~100x faster than an alternation per character on
# a c1.json, whose Phase1Out is one 70 MB string (11 s against 0.1 s).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_LONG_NUMBER = re.compile(rb"\d{%d,}" % (MAX_DIGITS + 1))
_STEP = np.zeros(256, dtype=np.int8)  # +1 for [ and {, -1 for ] and }
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1
_CHUNK = 1 << 22


class _NotJson(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _no_constant(name: str) -> Any:
    raise _NotJson(name)


def _scan(raw: bytes) -> tuple[int, int]:
    """What the decoder must not be given, strings skipped: the deepest nesting
    of arrays and objects (exact for valid JSON; on invalid JSON a lower bound
    of what a decoder would reach before it finds the error), and the digits of
    the first number longer than MAX_DIGITS (0 if none)."""
    bare = _STRING.sub(b'""', raw)
    depth = deepest = 0
    for start in range(0, len(bare), _CHUNK):
        a = np.frombuffer(bare, dtype=np.uint8, count=min(_CHUNK, len(bare) - start), offset=start)
        step = _STEP[a]
        step = step[np.flatnonzero(step)]  # the brackets only
        if not len(step):
            continue
        levels = np.cumsum(step, dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
    long = _LONG_NUMBER.search(bare)
    return deepest, (len(long.group()) if long else 0)


def loads(raw: bytes | str, source: str, field: str = "") -> Any:
    """The decoded document; InputError naming ``source`` and ``field`` otherwise."""
    data = raw.encode("utf-8", errors="surrogatepass") if isinstance(raw, str) else bytes(raw)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(source, field, f"not UTF-8 text (byte {e.start})") from None
    depth, digits = _scan(data)
    if depth > MAX_DEPTH:
        raise InputError(
            source, field, f"nested deeper than {MAX_DEPTH} levels of arrays and objects ({depth})"
        )
    if digits:  # Python refuses ints of more than 4300 digits, with a ValueError
        raise InputError(
            source, field, f"a number of {digits} digits (at most {MAX_DIGITS} are read)"
        )
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(
            source, field, f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except _NotJson as e:
        raise InputError(source, field, f"not valid JSON: {e.name} is not a JSON number") from None
    except RecursionError:  # not reached below MAX_DEPTH; kept as a last line
        raise InputError(source, field, "nested too deeply to decode") from None
