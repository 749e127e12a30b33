"""Every decoder within a time bound per input (issue 32): generated inputs, the
pathological string shapes among them (a quote followed by many escaped quotes froze the
daemon for 13 s on 64 KiB), each decoded or refused as bad input in time linear in its
size. Few examples and small sizes keep it fast; the full-size reproduction is
``python -m cuzk.bench.hardening json``."""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import SETTINGS, check_decoded, post_requests, seeds, snap_requests

from cuzk.circuits import jsondoc
from cuzk.engine.jobs import ProofKind, ProofRequest, UnsupportedKind, check_request_id
from cuzk.engine.kinds import check_circuit_id
from cuzk.engine.kinds.envelopes import decode_base64
from cuzk.errors import InputError
from cuzk.service.identity import parse_tokens
from cuzk.service.proto import proving_pb2 as pb

# Seconds an input may take: a fixed allowance (a shared CI core) and a rate far below
# any decoder's, so that only a super-linear one (seconds on 100 KB) passes it.
ALLOWANCE_S = 0.5
SECONDS_PER_MIB = 4.0

# String shapes that have cost decoders more than linear time, by size n.
SHAPES: dict[str, Callable[[int], str]] = {
    "quote, escaped quotes": lambda n: '"' + '\\"' * n,
    "escaped quotes, no quote": lambda n: '\\"' * n,
    "backslash run": lambda n: '"' + "\\" * n,
    "escaped backslashes": lambda n: '"' + "\\\\" * n + '"',
    "quote runs": lambda n: '"' * n,
    "open arrays": lambda n: "[" * n,
    "open objects": lambda n: '{"a":' * n,
    "digits": lambda n: "9" * n,
    "signs": lambda n: "-" * n + "1",
    "exponent": lambda n: "1e" + "9" * n,
    "fraction": lambda n: "0." + "0" * n,
    "unicode escapes": lambda n: '"' + "\\u00e9" * n + '"',
    "lone surrogates": lambda n: '"' + "\\ud800" * n + '"',
    "cut escapes": lambda n: '"' + "\\u00" * n,
    "many strings": lambda n: "[" + '"a",' * n + '"a"]',
    "many keys": lambda n: "{" + ",".join(f'"k{i}":{i}' for i in range(n)) + "}",
    "whitespace": lambda n: " " * n + "1",
    "nul bytes": lambda n: '"' + "\x00" * n + '"',
}
SIZES = st.sampled_from([1, 7, 64, 1000, 8000, 30_000])


@st.composite
def shaped(draw: st.DrawFn) -> str:
    """A pathological shape, alone, or spliced into a valid document."""
    text = SHAPES[draw(st.sampled_from(sorted(SHAPES)))](draw(SIZES))
    how = draw(st.sampled_from(["alone", "splice", "value", "key"]))
    if how == "alone":
        return text
    valid = json.dumps(seeds()["demo"])
    if how == "splice":
        at = draw(st.integers(0, len(valid)))
        return valid[:at] + text + valid[at:]
    if how == "value":
        return json.dumps({**seeds()["demo"], "rounds": "@"}).replace('"@"', text)
    return "{" + text + ': 1, "rounds": 1}'


def within_bound(size: int, fn: Callable[[], Any]) -> None:
    """``fn()`` answers (a value, or bad input) within the bound for ``size`` bytes."""
    t0 = time.perf_counter()
    try:
        fn()
    except (InputError, UnsupportedKind) as e:
        assert len(str(e)) < 4096
    elapsed = time.perf_counter() - t0
    bound = ALLOWANCE_S + SECONDS_PER_MIB * size / 2**20
    assert elapsed < bound, f"{elapsed:.2f} s for {size} bytes (bound {bound:.2f} s)"


TIMED = {**SETTINGS, "max_examples": 60}


@settings(**TIMED)
@given(text=shaped())
def test_json_documents(text: str) -> None:
    raw = text.encode("utf-8", errors="surrogatepass")
    within_bound(len(raw), lambda: jsondoc.loads(raw, "fuzz"))


@settings(**TIMED)
@given(text=shaped(), where=st.sampled_from(["demo", "c1", "phase1", "phase1-key"]))
def test_request_bodies(text: str, where: str) -> None:
    raw = text.encode("utf-8", errors="surrogatepass")
    if where == "demo":
        request = ProofRequest(ProofKind.DEMO, vanilla_proof=raw)
    else:
        inner = json.dumps(seeds()["phase1"]).encode()
        if where == "phase1":
            inner = raw
        elif where == "phase1-key":
            inner = inner[:-1] + b', "x": ' + raw + b"}"
        wrapper = {"SectorNum": 1, "Phase1Out": base64.b64encode(inner).decode()}
        body = json.dumps({**wrapper, "SectorSize": 2048}).encode()
        if where == "c1":
            body = body[:-1] + b', "Extra": ' + raw + b"}"
        request = ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=body)
    within_bound(request_size(request), lambda: check_decoded(request))


def request_size(r: ProofRequest) -> int:
    return len(r.vanilla_proof) + sum(len(v) for v in r.vanilla_proofs)


@settings(**{**SETTINGS, "max_examples": 40})
@given(request=st.one_of(post_requests(), snap_requests()))
def test_bincode_vanilla_proofs(request: ProofRequest) -> None:
    within_bound(request_size(request), lambda: check_decoded(request))


@settings(**{**SETTINGS, "max_examples": 30})
@given(text=shaped() | st.text(max_size=200))
def test_small_decoders(text: str) -> None:
    """Base64, token files, request and circuit ids: strings a client or a file hands in."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    for decode in (
        lambda: decode_base64(text, "fuzz", "Phase1Out"),
        lambda: parse_tokens(text),
        lambda: check_request_id(text),
        lambda: check_circuit_id(text),
    ):
        within_bound(size, decode)


@settings(**TIMED)
@given(raw=st.binary(max_size=2000) | shaped().map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_protobuf_frames(raw: bytes) -> None:
    """What the gRPC gate decodes: a frame of any bytes, in time linear in its length."""

    def decode() -> None:
        for message in (pb.SubmitProofRequest, pb.AwaitProofRequest, pb.PreloadSrsRequest):
            try:
                message.FromString(raw)
            except Exception as e:  # DecodeError: the gate answers INVALID_ARGUMENT
                assert type(e).__name__ == "DecodeError", repr(e)

    within_bound(len(raw), decode)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_linear_in_its_size(shape: str) -> None:
    """Four times the input costs at most about four times the time (a quadratic
    decoder: sixteen), measured on sizes where the decoder's own time dominates."""

    def cost(n: int) -> float:
        raw = SHAPES[shape](n).encode("utf-8", errors="surrogatepass")
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            with contextlib.suppress(InputError):
                jsondoc.loads(raw, "fuzz")
            best = min(best, time.perf_counter() - t0)
        return best

    small, large = cost(20_000), cost(80_000)
    assert large < 8 * small + 0.01, (small, large)
