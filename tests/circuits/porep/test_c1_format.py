"""C1 JSON: serde's exact layout, byte-exact round trips, errors naming the JSON path."""

from __future__ import annotations

import base64
import json

import pytest

from cuzk.circuits.porep.c1 import (
    dumps_c1,
    dumps_wrapper,
    load_c1_file,
    loads_c1,
    loads_wrapper,
)
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.errors import InputError


@pytest.fixture(scope="module")
def raw(sealed_2kib):
    return dumps_c1(sealed_2kib[1])


def test_round_trip_is_byte_exact(raw, sealed_2kib):
    c1 = loads_c1(raw)
    assert c1 == sealed_2kib[1]
    assert dumps_c1(c1) == raw
    # serde_json's compact form: what json.dumps writes with no spaces
    assert json.dumps(json.loads(raw), separators=(",", ":")).encode() == raw


def test_serde_field_order_and_variants(raw):
    doc = json.loads(raw)
    assert list(doc) == [
        "registered_proof",
        "vanilla_proofs",
        "comm_r",
        "comm_d",
        "replica_id",
        "seed",
        "ticket",
    ]
    assert doc["registered_proof"] == "StackedDrg2KiBV1_1"
    assert list(doc["vanilla_proofs"]) == ["StackedDrg2KiBV1"]  # V1 name for V1_1 proofs
    proof = doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]
    assert list(proof) == [
        "comm_d_proofs",
        "comm_r_last_proof",
        "replica_column_proofs",
        "labeling_proofs",
        "encoding_proof",
    ]
    single = proof["comm_d_proofs"]["data"]["Single"]
    assert list(single) == ["root", "leaf", "path"]
    assert list(single["path"]["path"][0]) == ["hashes", "index"]
    assert len(single["path"]["path"]) == 6  # 64 leaves, binary
    column = proof["replica_column_proofs"]["c_x"]["column"]
    assert list(column) == ["index", "rows", "_h"] and column["_h"] is None
    assert list(proof["labeling_proofs"][0]) == ["parents", "layer_index", "node"]
    assert len(proof["labeling_proofs"][0]["parents"]) == 37
    assert all(isinstance(x, int) for x in doc["comm_r"]) and len(doc["comm_r"]) == 32


def _mutate(raw: bytes, edit) -> bytes:
    doc = json.loads(raw)
    edit(doc)
    return json.dumps(doc, separators=(",", ":")).encode()


P0 = "vanilla_proofs.StackedDrg2KiBV1[0][1]"


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda d: d.pop("seed"), "(top level)", "missing field 'seed'"),
        (lambda d: d.update(registered_proof="StackedDrg3KiBV1"), "registered_proof", "unknown"),
        (
            lambda d: d["comm_d"].__setitem__(5, 256),
            "comm_d[5]",
            "expected a byte",
        ),
        (
            lambda d: d.update(comm_r=[255] * 32),
            "comm_r",
            "not below the modulus",
        ),
        (
            lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["comm_d_proofs"]["data"][
                "Single"
            ]["path"]["path"][2].update(index="1"),
            f"{P0}.comm_d_proofs.data.Single.path.path[2].index",
            "expected an integer",
        ),
        (
            lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["replica_column_proofs"][
                "drg_parents"
            ][3]["column"]["rows"].__setitem__(1, [1] * 31),
            f"{P0}.replica_column_proofs.drg_parents[3].column.rows[1]",
            "32 bytes",
        ),
        (
            lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["labeling_proofs"][1].pop(
                "node"
            ),
            f"{P0}.labeling_proofs[1]",
            "missing field 'node'",
        ),
        (
            lambda d: d["vanilla_proofs"].update(
                StackedDrg8MiBV1=d["vanilla_proofs"].pop("StackedDrg2KiBV1")
            ),
            "vanilla_proofs",
            "does not match",
        ),
    ],
)
def test_errors_name_the_json_path(raw, edit, field, problem):
    with pytest.raises(InputError) as e:
        loads_c1(_mutate(raw, edit), "c1.json")
    assert e.value.source == "c1.json"
    assert e.value.field == field
    assert problem in e.value.problem


def test_not_json():
    with pytest.raises(InputError, match="not valid JSON"):
        loads_c1(b'{"registered_proof": ', "c1.json")


def test_curio_wrapper_round_trip(raw):
    w = C1Wrapper(sector_num=234, phase1_out=raw, sector_size=2048)
    text = dumps_wrapper(w)
    assert text.startswith(b'{"SectorNum":234,"Phase1Out":"')
    assert text.endswith(b'","SectorSize":2048}')
    assert loads_wrapper(text) == w
    c1, wrapper = load_c1_file(text, "c1.json")
    assert wrapper == w and dumps_c1(c1) == raw
    # a bare C1 output is accepted too
    c1b, none = load_c1_file(raw, "c1.json")
    assert none is None and c1b == c1
    # Go matches JSON keys case-insensitively
    lower = json.dumps(
        {"sectornum": 1, "phase1out": base64.b64encode(raw).decode(), "sectorsize": 2048}
    )
    assert loads_wrapper(lower).sector_num == 1


def test_wrapper_errors(raw):
    b64 = base64.b64encode(raw).decode()
    bad = json.dumps({"SectorNum": 1, "Phase1Out": b64[:100] + "*" + b64[101:], "SectorSize": 2048})
    with pytest.raises(InputError) as e:
        loads_wrapper(bad, "c1.json")
    assert e.value.field == "Phase1Out" and "at byte 100" in e.value.problem
    wrong_size = json.dumps({"SectorNum": 1, "Phase1Out": b64, "SectorSize": 4096})
    with pytest.raises(InputError) as e:
        load_c1_file(wrong_size.encode(), "c1.json")
    assert e.value.field == "SectorSize"
    with pytest.raises(InputError) as e:
        loads_wrapper(json.dumps({"SectorNum": 1, "SectorSize": 2048}), "c1.json")
    assert e.value.field == "Phase1Out"
    inner = json.dumps(
        {"SectorNum": 1, "Phase1Out": base64.b64encode(b"{}").decode(), "SectorSize": 2048}
    )
    with pytest.raises(InputError) as e:
        load_c1_file(inner.encode(), "c1.json")
    assert e.value.source == "c1.json: Phase1Out"
