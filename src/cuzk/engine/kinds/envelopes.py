"""Checks on a request's envelope, before any circuit sees it.

What Curio's client sends for each kind: PoRep C2 carries Curio's ``c1.json``
(``{"SectorNum": n, "Phase1Out": "<base64 of the SealCommitPhase1Output
JSON>", "SectorSize": n}``) in ``vanilla_proof``; PoSt and SnapDeals carry one
vanilla proof per sector or partition in ``vanilla_proofs``, PoSt a 32-byte
``randomness``, SnapDeals three 32-byte commitments. These checks are the
same whichever circuit code proves the request, so a storage provider learns
that an input is malformed even from a daemon that cannot prove its kind.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import logging
import re
from dataclasses import dataclass
from typing import Any

from cuzk.circuits import jsondoc
from cuzk.circuits.porep.c1 import PHASE1_KEYS, check_sector_number
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.errors import InputError

log = logging.getLogger(__name__)

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
SECTOR_SIZES = {
    2 * KIB: "2KiB",
    8 * MIB: "8MiB",
    512 * MIB: "512MiB",
    32 * GIB: "32GiB",
    64 * GIB: "64GiB",
}
# Keys a c1.json (and its Phase1Out) may carry besides the ones read, in all: room
# for a newer Curio's small additions; a body padded with more is refused before
# it is journalled (it would be held, and stored, until its job ends).
UNKNOWN_KEYS_MAX_BYTES = 1024
C1_KEYS = ("SectorNum", "Phase1Out", "SectorSize")
_B64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_B64_ALPHABET = frozenset(_B64_BYTES)


@dataclass(frozen=True)
class C1Envelope:
    """Curio's c1.json, decoded one level: the SealCommitPhase1Output is JSON data."""

    sector_num: int
    sector_size: int
    phase1_out: dict[str, Any]
    phase1_raw: bytes = b""  # Phase1Out as decoded from base64 (the JSON text)


def sector_size_name(size: int) -> str:
    return SECTOR_SIZES.get(size, f"{size} bytes")


def _check_sector_size(size: int, source: str, field: str) -> None:
    if size not in SECTOR_SIZES:
        raise InputError(
            source,
            field,
            f"{size} is not a Filecoin sector size (expected one of "
            f"{', '.join(f'{v} ({k})' for k, v in SECTOR_SIZES.items())})",
        )


def decode_base64(text: str, source: str, field: str) -> bytes:
    """Standard base64 (Go's encoding of []byte), with the first bad character located."""
    raw = text.encode("ascii", errors="replace")
    if raw.translate(None, _B64_BYTES):  # a character outside the alphabet: find the first
        i = next(i for i, ch in enumerate(raw) if ch not in _B64_ALPHABET)
        shown = text[i] if i < len(text) else "?"
        raise InputError(source, field, f"not valid base64: character {shown!r} at offset {i}")
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error as e:
        raise InputError(
            source,
            field,
            f"not valid base64 ({e}; {len(raw)} characters, padding must make a multiple of 4)",
        ) from e


def check_unknown_keys(doc: dict[str, Any], known: tuple[str, ...], source: str, at: str) -> None:
    """InputError when the keys of ``doc`` outside ``known`` hold more than
    UNKNOWN_KEYS_MAX_BYTES of JSON text, naming the largest."""
    sizes = {}
    left = UNKNOWN_KEYS_MAX_BYTES + 1
    for key, value in doc.items():
        if key not in known:
            sizes[key] = len(key) + _json_size(value, left)
            left -= sizes[key]
    if sum(sizes.values()) > UNKNOWN_KEYS_MAX_BYTES:
        largest = max(sizes, key=sizes.__getitem__)
        shown = repr(largest) if len(largest) <= 40 else repr(largest[:37]) + "..."
        raise InputError(
            source,
            f"{at}{shown}",
            f"unknown key{'s' if len(sizes) > 1 else ''} ({len(sizes)}, {sum(sizes.values())} "
            f"bytes) beside {', '.join(known)}: at most {UNKNOWN_KEYS_MAX_BYTES} bytes of "
            "them are accepted",
        )


def _json_size(value: Any, limit: int) -> int:
    """About the length of ``value`` as JSON text, counted no further than past
    ``limit`` (a 100 MiB value costs what its first ``limit`` bytes do)."""
    size, todo = 0, [value]
    while todo and size <= limit:
        v = todo.pop()
        if isinstance(v, dict):
            size += 2 + sum(len(k) + 4 for k in itertools.islice(v, limit))
            todo.extend(itertools.islice(v.values(), limit))
        elif isinstance(v, list):
            size += 2 + len(v)
            todo.extend(v[:limit])
        else:  # numbers are at most jsondoc.MAX_DIGITS digits
            size += len(v) + 2 if isinstance(v, str) else len(str(v))
    return size


def decode_c1(request: ProofRequest, source: str = "c1.json") -> C1Envelope:
    data = request.vanilla_proof
    if not data:
        raise InputError(source, "vanilla_proof", "is empty: a PoRep C2 request carries c1.json")
    doc = jsondoc.loads(data, source)
    if not isinstance(doc, dict):
        raise InputError(source, "", f"expected a JSON object, got {type(doc).__name__}")
    check_unknown_keys(doc, C1_KEYS, source, "")
    for key, typ in (("SectorNum", int), ("Phase1Out", str), ("SectorSize", int)):
        if key not in doc:
            raise InputError(source, key, "is missing")
        if not isinstance(doc[key], typ) or isinstance(doc[key], bool):
            raise InputError(source, key, f"expected {typ.__name__}, got {type(doc[key]).__name__}")
    check_sector_number(doc["SectorNum"], source)
    size = doc["SectorSize"]
    _check_sector_size(size, source, "SectorSize")
    if request.sector_size and request.sector_size != size:
        # As Curio's daemon: the proof type decides (its bench sends 32GiB for any proof).
        log.warning(
            "%s: the request says sector_size %s, c1.json's SectorSize and registered "
            "proof say %s: proved as %s",
            source,
            sector_size_name(request.sector_size),
            sector_size_name(size),
            sector_size_name(size),
        )
    inner = decode_base64(doc["Phase1Out"], source, "Phase1Out")
    phase1 = jsondoc.loads(inner, source, "Phase1Out")
    if not isinstance(phase1, dict):
        raise InputError(source, "Phase1Out", "expected a SealCommitPhase1Output JSON object")
    check_unknown_keys(phase1, PHASE1_KEYS, source, "Phase1Out.")
    for key in PHASE1_KEYS:
        if key not in phase1:
            raise InputError(source, f"Phase1Out.{key}", "is missing")
    rp = phase1["registered_proof"]
    m = re.fullmatch(r"StackedDrg(\d+)(KiB|MiB|GiB)V1(_1|_2)?(_Feat_\w+)?", str(rp))
    if not m:
        raise InputError(
            source, "Phase1Out.registered_proof", f"{rp!r} is not a StackedDrg seal proof"
        )
    rp_size = int(m.group(1)) * {"KiB": KIB, "MiB": MIB, "GiB": GIB}[m.group(2)]
    if rp_size != size:
        raise InputError(
            source,
            "Phase1Out.registered_proof",
            f"{rp} is for {sector_size_name(rp_size)} sectors but SectorSize is "
            f"{sector_size_name(size)}",
        )
    return C1Envelope(
        sector_num=doc["SectorNum"], sector_size=size, phase1_out=phase1, phase1_raw=inner
    )


def _check_32(request: ProofRequest, names: tuple[str, ...], source: str) -> None:
    for name in names:
        value = getattr(request, name)
        if len(value) != 32:
            raise InputError(source, name, f"is {len(value)} bytes, expected 32")


def check_envelope(request: ProofRequest) -> C1Envelope | None:
    """Raise InputError when a request's envelope is malformed for its kind;
    what the check decoded (a PoRep request's c1.json), for the parse."""
    kind = request.proof_kind
    if kind == ProofKind.POREP_SEAL_COMMIT:
        return decode_c1(request)
    if kind in (ProofKind.WINNING_POST, ProofKind.WINDOW_POST_PARTITION):
        source = f"{kind.label} request"
        if request.sector_size:
            _check_sector_size(request.sector_size, source, "sector_size")
        if not request.vanilla_proofs:
            raise InputError(source, "vanilla_proofs", "is empty: one vanilla proof per sector")
        _check_32(request, ("randomness",), source)
    elif kind == ProofKind.SNAP_DEALS_UPDATE:
        source = "snap request"
        if request.sector_size:
            _check_sector_size(request.sector_size, source, "sector_size")
        if not request.vanilla_proofs:
            raise InputError(source, "vanilla_proofs", "is empty: one vanilla proof per partition")
        _check_32(request, ("comm_r_old", "comm_r_new", "comm_d_new"), source)
    return None
