"""Wire compatibility with Curio's cuzk.v1 API.

The tables below are the facts of Curio's
``extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto`` (filecoin-project/curio):
package, service and methods, and for every message and enum each field's
name, number, type and label. Our descriptors must match them exactly, so
that Curio's Go client talks to this daemon unchanged. The only addition
allowed is the ProofKind value CUZK_DEMO = 100.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from google.protobuf.descriptor import FieldDescriptor as FD

from cuzk.engine.jobs import Priority, ProofKind
from cuzk.service.proto import proving_pb2 as pb

REGENERATE = Path(__file__).resolve().parents[2] / "scripts" / "regenerate_proto.py"

U64, U32, STR, BYTES, BOOL, ENUM, MSG = (
    FD.TYPE_UINT64,
    FD.TYPE_UINT32,
    FD.TYPE_STRING,
    FD.TYPE_BYTES,
    FD.TYPE_BOOL,
    FD.TYPE_ENUM,
    FD.TYPE_MESSAGE,
)

# message -> [(field, number, type, type name for enum/message fields or None, repeated?)]
CURIO_MESSAGES = {
    "SubmitProofRequest": [
        ("request_id", 1, STR, None, False),
        ("proof_kind", 2, ENUM, "cuzk.v1.ProofKind", False),
        ("sector_size", 3, U64, None, False),
        ("registered_proof", 4, U64, None, False),
        ("priority", 5, ENUM, "cuzk.v1.Priority", False),
        ("vanilla_proof", 10, BYTES, None, False),
        ("vanilla_proofs", 11, BYTES, None, True),
        ("sector_number", 20, U64, None, False),
        ("miner_id", 21, U64, None, False),
        ("randomness", 22, BYTES, None, False),
        ("partition_index", 23, U32, None, False),
        ("comm_r_old", 30, BYTES, None, False),
        ("comm_r_new", 31, BYTES, None, False),
        ("comm_d_new", 32, BYTES, None, False),
    ],
    "SubmitProofResponse": [
        ("job_id", 1, STR, None, False),
        ("queue_position", 2, U32, None, False),
        ("assigned_gpu", 3, STR, None, False),
    ],
    "AwaitProofRequest": [
        ("job_id", 1, STR, None, False),
        ("timeout_ms", 2, U64, None, False),
    ],
    "AwaitProofResponse": [
        ("job_id", 1, STR, None, False),
        ("status", 2, ENUM, "cuzk.v1.AwaitProofResponse.Status", False),
        ("proof", 3, BYTES, None, False),
        ("error_message", 4, STR, None, False),
        ("queue_wait_ms", 10, U64, None, False),
        ("srs_load_ms", 11, U64, None, False),
        ("synthesis_ms", 12, U64, None, False),
        ("gpu_compute_ms", 13, U64, None, False),
        ("total_ms", 14, U64, None, False),
    ],
    "ProveRequest": [("submit", 1, MSG, "cuzk.v1.SubmitProofRequest", False)],
    "ProveResponse": [("result", 1, MSG, "cuzk.v1.AwaitProofResponse", False)],
    "CancelProofRequest": [("job_id", 1, STR, None, False)],
    "CancelProofResponse": [("was_running", 1, BOOL, None, False)],
    "GetStatusRequest": [],
    "GetStatusResponse": [
        ("gpus", 1, MSG, "cuzk.v1.GPUStatus", True),
        ("loaded_srs", 2, MSG, "cuzk.v1.SRSStatus", True),
        ("queues", 3, MSG, "cuzk.v1.QueueStatus", True),
        ("total_proofs_completed", 4, U64, None, False),
        ("total_proofs_failed", 5, U64, None, False),
        ("uptime_seconds", 6, U64, None, False),
        ("pinned_memory_bytes", 7, U64, None, False),
        ("pinned_memory_limit_bytes", 8, U64, None, False),
    ],
    "GPUStatus": [
        ("ordinal", 1, U32, None, False),
        ("name", 2, STR, None, False),
        ("vram_total_bytes", 3, U64, None, False),
        ("vram_free_bytes", 4, U64, None, False),
        ("current_job_id", 5, STR, None, False),
        ("current_proof_kind", 6, STR, None, False),
    ],
    "SRSStatus": [
        ("circuit_id", 1, STR, None, False),
        ("tier", 2, ENUM, "cuzk.v1.SRSStatus.Tier", False),
        ("size_bytes", 3, U64, None, False),
        ("ref_count", 4, U32, None, False),
    ],
    "QueueStatus": [
        ("proof_kind", 1, STR, None, False),
        ("pending", 2, U32, None, False),
        ("in_progress", 3, U32, None, False),
    ],
    "PreloadSrsRequest": [("circuit_id", 1, STR, None, False)],
    "PreloadSrsResponse": [
        ("already_loaded", 1, BOOL, None, False),
        ("load_time_ms", 2, U64, None, False),
    ],
    "EvictSrsRequest": [("circuit_id", 1, STR, None, False)],
    "EvictSrsResponse": [
        ("was_loaded", 1, BOOL, None, False),
        ("freed_bytes", 2, U64, None, False),
    ],
    "GetMetricsRequest": [],
    "GetMetricsResponse": [("prometheus_text", 1, STR, None, False)],
}

CURIO_ENUMS = {
    "cuzk.v1.ProofKind": {
        "PROOF_KIND_UNSPECIFIED": 0,
        "POREP_SEAL_COMMIT": 1,
        "SNAP_DEALS_UPDATE": 2,
        "WINDOW_POST_PARTITION": 3,
        "WINNING_POST": 4,
    },
    "cuzk.v1.Priority": {
        "PRIORITY_UNSPECIFIED": 0,
        "LOW": 1,
        "NORMAL": 2,
        "HIGH": 3,
        "CRITICAL": 4,
    },
    "cuzk.v1.AwaitProofResponse.Status": {
        "UNKNOWN": 0,
        "COMPLETED": 1,
        "FAILED": 2,
        "CANCELLED": 3,
        "TIMEOUT": 4,
    },
    "cuzk.v1.SRSStatus.Tier": {"HOT": 0, "WARM": 1, "COLD": 2},
}
OUR_ENUM_EXTENSIONS = {"cuzk.v1.ProofKind": {"CUZK_DEMO": 100}}

CURIO_METHODS = {
    "SubmitProof": ("SubmitProofRequest", "SubmitProofResponse"),
    "AwaitProof": ("AwaitProofRequest", "AwaitProofResponse"),
    "Prove": ("ProveRequest", "ProveResponse"),
    "CancelProof": ("CancelProofRequest", "CancelProofResponse"),
    "GetStatus": ("GetStatusRequest", "GetStatusResponse"),
    "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse"),
    "PreloadSRS": ("PreloadSrsRequest", "PreloadSrsResponse"),
    "EvictSRS": ("EvictSrsRequest", "EvictSrsResponse"),
}


def test_package_and_service() -> None:
    fd = pb.DESCRIPTOR
    assert fd.package == "cuzk.v1"
    assert fd.syntax == "proto3" if hasattr(fd, "syntax") else True
    assert list(fd.services_by_name) == ["ProvingEngine"]
    svc = fd.services_by_name["ProvingEngine"]
    assert svc.full_name == "cuzk.v1.ProvingEngine"
    got = {m.name: (m.input_type.name, m.output_type.name) for m in svc.methods}
    assert got == CURIO_METHODS
    for m in svc.methods:
        assert not m.client_streaming and not m.server_streaming


def test_every_message_field_matches_curio() -> None:
    fd = pb.DESCRIPTOR
    assert set(fd.message_types_by_name) == set(CURIO_MESSAGES)
    for name, fields in CURIO_MESSAGES.items():
        desc = fd.message_types_by_name[name]
        got = []
        for f in desc.fields:
            type_name = None
            if f.type == ENUM:
                type_name = f.enum_type.full_name
            elif f.type == MSG:
                type_name = f.message_type.full_name
            got.append((f.name, f.number, f.type, type_name, f.is_repeated))
        assert sorted(got, key=lambda x: x[1]) == sorted(fields, key=lambda x: x[1]), name
        assert not desc.oneofs, name


def _enums() -> dict[str, dict[str, int]]:
    out = {}
    fd = pb.DESCRIPTOR
    for e in fd.enum_types_by_name.values():
        out[e.full_name] = {v.name: v.number for v in e.values}
    for m in fd.message_types_by_name.values():
        for e in m.enum_types:
            out[e.full_name] = {v.name: v.number for v in e.values}
    return out


def test_every_enum_matches_curio_plus_only_the_demo_extension() -> None:
    got = _enums()
    assert set(got) == set(CURIO_ENUMS)
    for name, values in CURIO_ENUMS.items():
        assert got[name] == {**values, **OUR_ENUM_EXTENSIONS.get(name, {})}, name
    # The extension lives outside Curio's range, so their values never collide.
    assert min(OUR_ENUM_EXTENSIONS["cuzk.v1.ProofKind"].values()) > max(
        CURIO_ENUMS["cuzk.v1.ProofKind"].values()
    )


def test_engine_enums_use_the_wire_values() -> None:
    for kind in ProofKind:
        wire = "CUZK_DEMO" if kind == ProofKind.DEMO else kind.name
        if kind == ProofKind.UNSPECIFIED:
            wire = "PROOF_KIND_UNSPECIFIED"
        assert pb.ProofKind.Value(wire) == int(kind)
    for p in Priority:
        wire = "PRIORITY_UNSPECIFIED" if p == Priority.UNSPECIFIED else p.name
        assert pb.Priority.Value(wire) == int(p)


def test_known_bytes_decode_as_curio_encodes_them() -> None:
    # Hand-encoded: field 1 (request_id, "r") , field 2 (proof_kind = 4),
    # field 11 twice (vanilla_proofs "a", "b"), field 23 (partition_index = 7),
    # field 32 (comm_d_new, one byte 0xff): tags as Curio's Go client writes them.
    raw = bytes.fromhex("0a017210045a01615a0162b80107820201ff")
    m = pb.SubmitProofRequest.FromString(raw)
    assert m.request_id == "r"
    assert m.proof_kind == pb.WINNING_POST
    assert list(m.vanilla_proofs) == [b"a", b"b"]
    assert m.partition_index == 7
    assert m.comm_d_new == b"\xff"
    assert m.SerializeToString() == raw


def test_generated_modules_are_up_to_date() -> None:
    """scripts/regenerate_proto.py --check: the committed modules are protoc's output."""
    spec = importlib.util.spec_from_file_location("regenerate_proto", REGENERATE)
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    assert regenerate.main(["--check"]) == 0
