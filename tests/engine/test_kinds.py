"""Proof kinds: the demo kind, the registry, and Filecoin request envelopes."""

from __future__ import annotations

import base64
import json
import random
import tracemalloc

import pytest

from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.jobs import ProofKind, ProofRequest, UnsupportedKind
from cuzk.engine.kinds import KIND_MODULES, KindRegistry, default_registry, demo
from cuzk.engine.kinds.envelopes import (
    UNKNOWN_KEYS_MAX_BYTES,
    check_envelope,
    decode_base64,
    decode_c1,
)
from cuzk.errors import InputError
from cuzk.groth16 import prover, setup

C = DemoCircuit(rounds=30, words=2)
CID = demo.circuit_id(30, 2)


def demo_req(body: object) -> ProofRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return ProofRequest(ProofKind.DEMO, vanilla_proof=raw)


def test_demo_parse_and_witness_satisfies_the_circuit() -> None:
    kind = demo.DemoKind()
    parsed = kind.parse(demo_req(demo.make_vanilla(C, 3, random.Random(1))))
    assert parsed.circuit_id == CID and len(parsed.partitions) == 3
    assert kind.owns(CID) and not kind.owns("porep-32g")
    r1cs = kind.r1cs(CID)
    for part in parsed.partitions:
        w = kind.synthesize(CID, part)
        assert r1cs.is_satisfied(w.assignment)
        x, secrets = part.data
        assert w.public_inputs == (x, C.evaluate(x, list(secrets)))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not valid JSON"),
        ([1, 2], "expected a JSON object"),
        ({"rounds": 0, "words": 1, "instances": []}, "rounds: 0 is out of range"),
        ({"rounds": 5, "words": 1, "instances": []}, "instances: expected a list of 1 to 64"),
        ({"rounds": 5, "words": 1, "instances": [{"x": "1"}]}, r"secrets: expected a list of 1"),
        (
            {"rounds": 5, "words": 1, "instances": [{"x": "1", "secrets": [str(1 << 64)]}]},
            r"instances\[0\].secrets\[0\]: .* out of range",
        ),
        (
            {"rounds": 5, "words": 1, "instances": [{"x": "-3", "secrets": ["1"]}]},
            r"instances\[0\].x: expected an integer",
        ),
    ],
)
def test_demo_bad_bodies(body: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        demo.DemoKind().parse(demo_req(body))


def test_working_bytes_covers_what_a_partition_really_allocates() -> None:
    """The reservation must be at least the Python-visible peak of synthesis + proof."""
    kind = demo.DemoKind()
    r1cs = kind.r1cs(CID)
    key = prover.prepare(setup.setup(r1cs, seed=3), r1cs, CpuBackend())
    part = kind.parse(demo_req(demo.make_vanilla(C, 1))).partitions[0]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        w = kind.synthesize(CID, part)
        prover.prove(key, r1cs, w.assignment)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= kind.working_bytes(CID)


def test_registry_reports_unregistered_kinds_clearly() -> None:
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    with pytest.raises(UnsupportedKind, match=r"WINNING_POST \(winning\) is not available.*demo"):
        reg.handler(ProofKind.WINNING_POST)
    with pytest.raises(InputError, match="unspecified"):
        reg.parse(ProofRequest(ProofKind.UNSPECIFIED))
    with pytest.raises(InputError, match="no registered proof kind"):
        reg.for_circuit("porep-32g")
    assert reg.for_circuit(CID).kind == ProofKind.DEMO


@pytest.mark.parametrize(
    "cid", ["demo-r010-w1", "demo-r10-w01", "demo-r0-w1", "demo-r" + "9" * 4400 + "-w1"]
)
def test_a_demo_size_has_one_spelling_and_a_bounded_one(cid: str) -> None:
    """Leading zeros would name a second key of the same circuit; thousands of
    digits reached the file system as a name too long (Preload, Evict)."""
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    with pytest.raises(InputError, match=r"no registered proof kind|4409 characters, at most 128"):
        reg.for_circuit(cid)
    assert reg.for_circuit("demo-r10-w1").kind == ProofKind.DEMO


def test_default_registry_skips_modules_not_written_yet() -> None:
    reg = default_registry()
    assert ProofKind.DEMO in reg.kinds()
    assert KIND_MODULES[0] == "cuzk.engine.kinds.demo"


# --- envelopes ----------------------------------------------------------------------------
PHASE1 = {
    "registered_proof": "StackedDrg32GiBV1_1",
    "vanilla_proofs": {},
    "comm_r": [0] * 32,
    "comm_d": [0] * 32,
    "replica_id": [0] * 32,
    "seed": [0] * 32,
    "ticket": [0] * 32,
}


def c1(phase1: object = PHASE1, size: int = 32 << 30, b64: str | None = None) -> bytes:
    if b64 is None:
        b64 = base64.b64encode(json.dumps(phase1).encode()).decode()
    return json.dumps({"SectorNum": 9, "Phase1Out": b64, "SectorSize": size}).encode()


def porep(raw: bytes, sector_size: int = 0) -> ProofRequest:
    return ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=raw, sector_size=sector_size)


def test_valid_c1_envelope() -> None:
    env = decode_c1(porep(c1(), 32 << 30))
    assert env.sector_num == 9 and env.sector_size == 32 << 30
    assert env.phase1_out["registered_proof"] == "StackedDrg32GiBV1_1"


@pytest.mark.parametrize(
    ("raw", "size", "message"),
    [
        (b"", 0, "vanilla_proof: is empty"),
        (b'{"a": "\xc3\x28"}', 0, "not UTF-8"),
        (b'{"SectorNum": 1', 0, "not valid JSON: .* line 1 column"),
        (b"[]", 0, "expected a JSON object"),
        (b'{"Phase1Out": "", "SectorSize": 2048}', 0, "SectorNum: is missing"),
        (b'{"SectorNum": "1", "Phase1Out": "", "SectorSize": 2048}', 0, "SectorNum: expected int"),
        (
            b'{"SectorNum": -1, "Phase1Out": "", "SectorSize": 2048}',
            0,
            "SectorNum: expected a sector",
        ),
        (
            b'{"SectorNum": 18446744073709551616, "Phase1Out": "", "SectorSize": 2048}',
            0,
            "SectorNum: expected a sector number",
        ),
        (c1(b64="abc$"), 0, r"Phase1Out: not valid base64: character '\$' at offset 3"),
        (c1(b64="abcde"), 0, "Phase1Out: not valid base64 .*multiple of 4"),
        (c1(b64=base64.b64encode(b"{nope").decode()), 0, "Phase1Out: not valid JSON"),
        (c1(size=4096), 0, "SectorSize: 4096 is not a Filecoin sector size"),
        (c1(size=64 << 30), 0, "StackedDrg32GiBV1_1 is for 32GiB sectors but SectorSize is 64GiB"),
        (c1({**PHASE1, "registered_proof": "StackedDrgWindow"}), 0, "not a StackedDrg seal proof"),
        (c1({k: v for k, v in PHASE1.items() if k != "seed"}), 0, r"Phase1Out.seed: is missing"),
    ],
)
def test_malformed_c1(raw: bytes, size: int, message: str) -> None:
    with pytest.raises(InputError, match=message) as ei:
        check_envelope(porep(raw, size))
    assert str(ei.value).startswith("c1.json")


def test_c1_unknown_keys_are_refused_beyond_a_small_allowance() -> None:
    """A valid c1.json padded with an unknown key is refused before it is journalled
    (issue 32: 20 padded 2KiB bodies filled the per-kind 2 GiB); a small one passes."""
    small = json.loads(c1())
    small["CurioVersion"] = "1.24"
    assert decode_c1(porep(json.dumps(small).encode())).sector_num == 9
    padded = {**json.loads(c1()), "Padding": "x" * (UNKNOWN_KEYS_MAX_BYTES + 1)}
    with pytest.raises(InputError, match=r"c1.json: 'Padding': unknown key .* at most 1024"):
        check_envelope(porep(json.dumps(padded).encode()))
    inner = {**PHASE1, "extra": list(range(400))}
    with pytest.raises(InputError, match=r"Phase1Out.'extra': unknown key"):
        check_envelope(porep(c1(inner)))
    many = {**PHASE1, **{f"k{i}": 1 for i in range(300)}}
    with pytest.raises(InputError, match=r"unknown keys \(300, "):
        check_envelope(porep(c1(many)))


def test_base64_decoder() -> None:
    assert decode_base64("aGVsbG8=", "s", "f") == b"hello"
    with pytest.raises(InputError, match="character ' ' at offset 1"):
        decode_base64("a GVsbG8=", "s", "f")


def test_post_and_snap_envelopes() -> None:
    ok = ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"v",), randomness=bytes(32))
    check_envelope(ok)
    with pytest.raises(InputError, match="vanilla_proofs: is empty"):
        check_envelope(ProofRequest(ProofKind.WINDOW_POST_PARTITION, randomness=bytes(32)))
    with pytest.raises(InputError, match="sector_size: 1000 is not a Filecoin sector size"):
        check_envelope(
            ProofRequest(
                ProofKind.WINNING_POST,
                sector_size=1000,
                vanilla_proofs=(b"v",),
                randomness=bytes(32),
            )
        )
    snap = ProofRequest(
        ProofKind.SNAP_DEALS_UPDATE,
        vanilla_proofs=(b"p",),
        comm_r_old=bytes(32),
        comm_r_new=bytes(32),
        comm_d_new=bytes(31),
    )
    with pytest.raises(InputError, match="comm_d_new: is 31 bytes, expected 32"):
        check_envelope(snap)


# --- hostile inputs (issue 15, item 4): each is INVALID_ARGUMENT, never INTERNAL ------------
BIG = "1" * 5000  # more digits than Python converts to an int by default (4300)
DEEP = "[" * 100_000 + "]" * 100_000


def phase1(text: str) -> bytes:
    """A c1.json whose Phase1Out decodes to ``text``."""
    b64 = base64.b64encode(text.encode()).decode()
    return json.dumps({"SectorNum": 9, "Phase1Out": b64, "SectorSize": 2048}).encode()


HOSTILE = [
    # (kind, vanilla_proof, the message's field and problem)
    (
        ProofKind.DEMO,
        f'{{"rounds": {BIG}}}'.encode(),
        r"^demo vanilla proof: a number of 5000 digits",
    ),
    (ProofKind.DEMO, DEEP.encode(), r"^demo vanilla proof: nested deeper than 64 levels"),
    (
        ProofKind.DEMO,
        '{"rounds": "²", "words": 1, "instances": []}'.encode(),
        r"^demo vanilla proof: rounds: expected an integer, got '²'",
    ),
    (
        ProofKind.DEMO,
        '{"rounds": 5, "words": 1, "instances": [{"x": "1", "secrets": ["١٢"]}]}'.encode(),
        r"secrets\[0\]: expected an integer, got '١٢'",
    ),
    (
        ProofKind.POREP_SEAL_COMMIT,
        f'{{"SectorNum": {BIG}}}'.encode(),
        r"^c1.json: a number of 5000 digits",
    ),
    (ProofKind.POREP_SEAL_COMMIT, DEEP.encode(), r"^c1.json: nested deeper than 64 levels"),
    (
        ProofKind.POREP_SEAL_COMMIT,
        phase1(f'{{"registered_proof": {BIG}}}'),
        r"^c1.json: Phase1Out: a number of 5000 digits",
    ),
    (ProofKind.POREP_SEAL_COMMIT, phase1(DEEP), r"^c1.json: Phase1Out: nested deeper than"),
]


@pytest.mark.parametrize(("kind", "raw", "message"), HOSTILE)
def test_hostile_json_is_bad_input_named_by_field(kind: ProofKind, raw: bytes, message: str):
    with pytest.raises(InputError, match=message):
        default_registry().parse(ProofRequest(kind, vanilla_proof=raw))
