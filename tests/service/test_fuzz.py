"""Every request decoder, fuzzed (issue 15): thousands of generated inputs (demo JSON,
c1.json and its Phase1Out, bincode PoSt and SnapDeals vanilla proofs, and the PoSt and
SnapDeals fields) are answered as bad input or accepted, never INTERNAL, never with a
traceback, and the daemon serves on.

Inputs start from valid requests and are broken the ways a client can break them:
a JSON subtree replaced by a hostile value (huge or long numbers, Unicode digits,
deep nesting, NaN, long strings, wrong types), bytes flipped, cut, inserted or
overwritten with large lengths, fields of the wrong size or range, and plain noise.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import random
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import pytest
from daemon_harness import running_daemon
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuzk.circuits.demo import DemoCircuit
from cuzk.circuits.porep.c1 import dumps_c1
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.sealer import seal_random
from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import write_sector_proof
from cuzk.circuits.update.generate import generate_sector
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import write_partition_proof
from cuzk.engine.jobs import ProofKind, ProofRequest, UnsupportedKind
from cuzk.engine.kinds import default_registry, demo
from cuzk.errors import InputError
from cuzk.hashers.domain import fr_to_le_bytes
from cuzk.service import convert
from cuzk.service.proto import proving_pb2 as pb

SETTINGS = {
    "deadline": None,
    "database": None,
    "derandomize": True,  # the same inputs on every run: a failure is reproducible
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


# --- valid seeds ---------------------------------------------------------------------------
@cache
def seeds() -> dict[str, Any]:
    _, c1 = seal_random(REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"], random.Random(7))
    snap = generate_sector(UpdateParams.of("2KiB"), random.Random(21))
    window = config_for_registered_proof(10)  # StackedDrgWindow2KiBV1_1
    winning = config_for_registered_proof(0)  # StackedDrgWinning2KiBV1
    return {
        "demo": json.loads(demo.make_vanilla(DemoCircuit(20, 2), 2, random.Random(3))),
        "phase1": json.loads(dumps_c1(c1)),
        "window": [
            write_sector_proof(generate_sector_proof(window, bytes(32), 100 + i, i))
            for i in range(2)
        ],
        "winning": write_sector_proof(generate_sector_proof(winning, bytes(32), 100, 0)),
        "snap": write_partition_proof(snap.partition_proof(0)),
        "snap_comms": (snap.comm_r_old, snap.comm_d_new, snap.comm_r_new),
    }


# --- hostile values ------------------------------------------------------------------------
LONG_NUMBER = "<5000 digits>"
HOSTILE_SCALARS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**120), max_value=10**120),
    st.just(LONG_NUMBER),  # written as 5000 digits, more than Python converts by default
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["²", "١٢", "٣", "𝟗", "1e5", "-1", "0x10", " 7", "7 ", "", "9" * 200]),
    st.text(alphabet="0123456789", min_size=1, max_size=120),
)
JSON_VALUES = st.recursive(
    HOSTILE_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def json_text(value: Any) -> bytes:
    """Text of a value, NaN included (json.dumps writes it), LONG_NUMBER as its digits."""
    return json.dumps(value).replace(f'"{LONG_NUMBER}"', "9" * 5000).encode()


@st.composite
def replaced(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one subtree (found by walking down at random) replaced."""

    def walk(node: Any, depth: int) -> Any:
        children = (
            list(node.items())
            if isinstance(node, dict)
            else list(enumerate(node))
            if isinstance(node, list)
            else []
        )
        if not children or depth > 12 or draw(st.integers(0, 3)) == 0:
            return draw(JSON_VALUES)
        key, child = children[draw(st.integers(0, len(children) - 1))]
        copy = dict(node) if isinstance(node, dict) else list(node)
        if draw(st.integers(0, 9)) == 0:  # drop the field instead
            del copy[key]
            return copy
        copy[key] = walk(child, depth + 1)
        return copy

    return walk(doc, 0)


@st.composite
def mangled(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with byte-level damage: flips, cuts, insertions, large lengths."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "cut", "insert", "length", "truncate", "append"]))
        at = draw(st.integers(0, max(0, len(out) - 1)))
        if how == "flip" and out:
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "cut":
            del out[at : at + draw(st.integers(1, 64))]
        elif how == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif how == "length":  # a little-endian u64 length that promises too much
            big = draw(st.sampled_from([2**64 - 1, 2**63, 2**32, 10**9, 1 << 20, 0]))
            out[at : at + 8] = big.to_bytes(8, "little")
        elif how == "truncate":
            del out[at:]
        else:
            out += draw(st.binary(max_size=64))
    return bytes(out)


# --- requests per kind ---------------------------------------------------------------------
@st.composite
def demo_requests(draw: st.DrawFn) -> ProofRequest:
    how = draw(st.sampled_from(["replace", "bytes", "value", "deep", "noise"]))
    doc = seeds()["demo"]
    if how == "replace":
        raw = json_text(draw(replaced(doc)))
    elif how == "bytes":
        raw = draw(mangled(json_text(doc)))
    elif how == "value":
        raw = json_text(draw(JSON_VALUES))
    elif how == "deep":
        raw = nested(draw(st.integers(60, 200_000))).encode()
    else:
        raw = draw(st.binary(max_size=200))
    return ProofRequest(ProofKind.DEMO, vanilla_proof=raw)


@st.composite
def c1_requests(draw: st.DrawFn) -> ProofRequest:
    phase1 = seeds()["phase1"]
    inner = json_text(phase1)
    how = draw(st.sampled_from(["phase1", "phase1-bytes", "wrapper", "bytes", "deep", "b64"]))
    wrapper = {"SectorNum": 234, "Phase1Out": base64.b64encode(inner).decode(), "SectorSize": 2048}
    if how == "phase1":
        wrapper["Phase1Out"] = base64.b64encode(json_text(draw(replaced(phase1)))).decode()
    elif how == "phase1-bytes":
        wrapper["Phase1Out"] = base64.b64encode(draw(mangled(inner))).decode()
    elif how == "wrapper":
        wrapper = draw(replaced(wrapper))
    elif how == "deep":
        text = nested(draw(st.integers(60, 100_000)))
        if draw(st.booleans()):
            wrapper["Phase1Out"] = base64.b64encode(text.encode()).decode()
        else:
            return ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=text.encode())
    elif how == "b64":
        b64 = wrapper["Phase1Out"]
        at = draw(st.integers(0, len(b64) - 1))
        wrapper["Phase1Out"] = b64[:at] + draw(st.text(max_size=4)) + b64[at + 1 :]
    raw = json_text(wrapper)
    if how == "bytes":
        raw = draw(mangled(raw))
    return ProofRequest(
        ProofKind.POREP_SEAL_COMMIT,
        vanilla_proof=raw,
        sector_size=draw(st.sampled_from([0, 0, 2048, 32 << 30, 1000])),
        registered_proof=draw(st.sampled_from([0, 0, 5, 3, 99, -1])),
    )


FIELD_BYTES = st.one_of(st.binary(min_size=32, max_size=32), st.binary(max_size=40))
NUMBERS = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 2048, 32 << 30, 2**63]))


@st.composite
def post_requests(draw: st.DrawFn) -> ProofRequest:
    kind = draw(st.sampled_from([ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST]))
    valid = seeds()["window"] if kind == ProofKind.WINDOW_POST_PARTITION else [seeds()["winning"]]
    proofs = [draw(mangled(p)) if draw(st.booleans()) else p for p in valid]
    if draw(st.integers(0, 4)) == 0:
        proofs = draw(st.lists(st.binary(max_size=300), max_size=3))
    return ProofRequest(
        kind,
        registered_proof=draw(st.sampled_from([10, 0, 3, 13, 99]) | NUMBERS),
        sector_size=draw(st.sampled_from([0, 2048]) | NUMBERS),
        vanilla_proofs=tuple(proofs),
        randomness=draw(FIELD_BYTES),
        partition_index=draw(st.sampled_from([0, 0, 1]) | NUMBERS),
    )


@st.composite
def snap_requests(draw: st.DrawFn) -> ProofRequest:
    valid = seeds()["snap"]
    proofs = [draw(mangled(valid)) if draw(st.booleans()) else valid]
    if draw(st.integers(0, 4)) == 0:
        proofs = draw(st.lists(st.binary(max_size=300), max_size=5))
    comms = [fr_to_le_bytes(c) for c in seeds()["snap_comms"]]
    for i in range(3):
        if draw(st.integers(0, 2)) == 0:
            comms[i] = draw(st.sampled_from([b"\xff" * 32]) | FIELD_BYTES)
    return ProofRequest(
        ProofKind.SNAP_DEALS_UPDATE,
        registered_proof=draw(st.sampled_from([0, 0, 1, 4, 5]) | NUMBERS),
        sector_size=draw(st.sampled_from([0, 2048]) | NUMBERS),
        vanilla_proofs=tuple(proofs),
        comm_r_old=comms[0],
        comm_d_new=comms[1],
        comm_r_new=comms[2],
    )


# --- the decoders directly: thousands of inputs ----------------------------------------------
def check_decoded(request: ProofRequest) -> None:
    """Decoded, or refused as bad input with a short message naming where: nothing else."""
    try:
        default_registry().parse(request)
    except (InputError, UnsupportedKind) as e:
        message = str(e)
        assert message and "Traceback" not in message
        assert len(message) < 4096, message[:200]  # a client's megabytes are not echoed


@pytest.mark.parametrize(
    ("strategy", "examples"),
    [
        (demo_requests(), 1200),
        (c1_requests(), 450),
        (post_requests(), 900),
        (snap_requests(), 700),
    ],
    ids=["demo", "c1.json", "post", "snap"],
)
def test_every_decoder_answers_bad_input_as_such(strategy, examples: int) -> None:
    @settings(max_examples=examples, **SETTINGS)
    @given(request=strategy)
    def decode(request: ProofRequest) -> None:
        check_decoded(request)

    decode()


# --- through the daemon ------------------------------------------------------------------------
ANSWERS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def test_the_daemon_answers_generated_requests_and_serves_on(tmp_path: Path, caplog) -> None:
    requests = st.one_of(demo_requests(), c1_requests(), post_requests(), snap_requests())
    seen: dict[grpc.StatusCode | str, int] = {}
    with running_daemon(tmp_path) as d, caplog.at_level(logging.WARNING):
        c = d.client()

        @settings(max_examples=400, **SETTINGS)
        @given(request=requests, request_id=st.text(max_size=20) | st.just(""))
        def submit(request: ProofRequest, request_id: str) -> None:
            wire = dataclasses.replace(  # the wire's unsigned ranges (uint64, uint32)
                request,
                request_id=request_id,
                sector_size=request.sector_size % 2**64,
                registered_proof=request.registered_proof % 2**64,
                partition_index=request.partition_index % 2**32,
            )
            m = convert.request_to_pb(wire)
            try:
                job_id = c.submit(m).job_id
            except grpc.RpcError as e:
                assert e.code() in ANSWERS, (e.code(), e.details()[:300])
                assert "Traceback" not in e.details()
                seen[e.code()] = seen.get(e.code(), 0) + 1
                return
            seen["accepted"] = seen.get("accepted", 0) + 1
            c.cancel(job_id)  # accepted: it is a real job, and not what this test is for

        submit()
        # alive and serving: a good request is still proven and verified
        good = pb.SubmitProofRequest(
            proof_kind=pb.CUZK_DEMO, vanilla_proof=demo.make_vanilla(DemoCircuit(20, 1))
        )
        assert c.prove(good).status == pb.AwaitProofResponse.COMPLETED
        assert c.status().total_proofs_completed == 1
    assert seen.get(grpc.StatusCode.INVALID_ARGUMENT, 0) > 200, seen
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not tracebacks, tracebacks[0].getMessage()
