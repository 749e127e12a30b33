"""JSON documents from clients, decoded within bounds.

Every JSON input a request can carry (the demo kind's body, Curio's c1.json
and its Phase1Out, SnapDeals' proof container) goes through :func:`loads`,
which turns every way a document can be hostile into an InputError naming
the source and field: bytes that are not UTF-8, text that is not JSON,
nesting deeper than :data:`MAX_DEPTH` (Python's decoder would recurse until
it hits the interpreter's limit), integers longer than :data:`MAX_DIGITS`
digits (Python refuses to convert more than 4300 digits, with a ValueError),
and NaN or Infinity, which JSON does not have. Every check is one pass in
time linear in the document (:class:`_Scan`), and the decoder is json's C
one: no shape of input costs more than its length.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from cuzk.errors import InputError

# The formats read here nest a dozen levels at most (a c1.json's Merkle paths);
# 64 leaves room and keeps the decoder far from the interpreter's recursion limit.
MAX_DEPTH = 64
# The longest integer any of them carries is a field element in decimal (78 digits).
MAX_DIGITS = 100

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_STEP = np.zeros(256, dtype=np.int8)  # +1 for [ and {, -1 for ] and }
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[list(b"0123456789")] = True
_CHUNK = 1 << 22


class _NotJson(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _no_constant(name: str) -> Any:
    raise _NotJson(name)


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in ``mask``, ends exclusive."""
    edges = np.diff(mask.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


class _Scan:
    """What the decoder must not be given, read a chunk at a time in one pass
    (linear in the input: a regular expression for string literals backtracked
    quadratically on a quote followed by many escaped quotes): the deepest
    nesting of arrays and objects outside strings (exact for valid JSON; on
    invalid JSON a lower bound of what a decoder would reach before the error),
    and the digits of the first run of digits outside strings longer than
    MAX_DIGITS (0 if none).

    A quote ends or starts a string unless an odd run of backslashes precedes
    it; the state carried from chunk to chunk is whether a string is open, the
    backslashes that ended the last chunk, the bracket depth and the digits
    that ended it."""

    def __init__(self) -> None:
        self.inside = False
        self.backslashes = 0  # the run of backslashes that ended the last chunk
        self.depth = self.deepest = 0
        self.digits = 0  # the run of digits that ended the last chunk (outside strings)
        self.long = 0

    def feed(self, a: np.ndarray) -> None:
        n = len(a)
        quotes = np.flatnonzero(a == _QUOTE)
        if not len(quotes) and self.inside:  # the middle of a long string (a Phase1Out)
            self._carry_backslashes(a)
            return
        if len(quotes):
            starts, ends = _runs(a == _BACKSLASH)
            # the backslash run that ends right before each quote, if any
            k = np.minimum(np.searchsorted(ends, quotes, side="left"), max(len(ends) - 1, 0))
            before = np.zeros(len(quotes), dtype=np.int64)
            hit = (ends[k] == quotes) if len(ends) else np.zeros(len(quotes), dtype=bool)
            before[hit] = quotes[hit] - starts[k[hit]]
            touches = hit & (starts[k] == 0) if len(ends) else hit
            before[touches] += self.backslashes  # a run begun in the last chunk
            if quotes[0] == 0:
                before[0] = self.backslashes
            live = quotes[before % 2 == 0]
        else:
            live = quotes
        # inside[i]: byte i is part of a string (its opening quote included)
        flips = np.zeros(n, dtype=np.int32)
        flips[live] = 1
        inside = (np.cumsum(flips, dtype=np.int32) + self.inside) % 2 == 1
        inside[live] = True  # a closing quote is still the string's
        outside = ~inside
        step = _STEP[a]
        step = step[outside & (step != 0)]
        if len(step):
            levels = np.cumsum(step, dtype=np.int64) + self.depth
            self.deepest = max(self.deepest, int(levels.max()))
            self.depth = int(levels[-1])
        self._count_digits(_DIGIT[a] & outside, n)
        self.inside = bool((self.inside + len(live)) % 2)
        self._carry_backslashes(a)

    def _carry_backslashes(self, a: np.ndarray) -> None:
        """The run of backslashes the chunk ends with (joined to the last one's
        when the chunk is nothing else)."""
        n = len(a)
        if not n or a[-1] != _BACKSLASH:
            self.backslashes = 0
            return
        other = np.flatnonzero(a != _BACKSLASH)
        tail = n - 1 - int(other[-1]) if len(other) else n
        self.backslashes = tail + (self.backslashes if tail == n else 0)

    def _count_digits(self, digit: np.ndarray, n: int) -> None:
        if self.long:
            return
        starts, ends = _runs(digit)
        lengths = ends - starts
        if len(starts) and starts[0] == 0:
            lengths[0] += self.digits
        elif self.digits > MAX_DIGITS:  # the long run ended with the last chunk
            self.long = self.digits
            return
        long = np.flatnonzero(lengths > MAX_DIGITS)
        if len(long) and ends[long[0]] < n:
            self.long = int(lengths[long[0]])
            return
        # a run still open at the chunk's end goes on into the next (a long one too)
        self.digits = int(lengths[-1]) if len(ends) and ends[-1] == n else 0

    def finish(self) -> tuple[int, int]:
        return self.deepest, self.long or (self.digits if self.digits > MAX_DIGITS else 0)


def _scan(raw: bytes) -> tuple[int, int]:
    """(deepest nesting, digits of the first over-long number): see :class:`_Scan`."""
    scan = _Scan()
    for start in range(0, len(raw), _CHUNK):
        count = min(_CHUNK, len(raw) - start)
        scan.feed(np.frombuffer(raw, dtype=np.uint8, count=count, offset=start))
    return scan.finish()


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
