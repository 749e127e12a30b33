"""A stand-in for Curio's Go client (lib/cuzk/client.go, lib/ffi/cuzk_funcs.go).

Its stubs are built from proving.proto when a test asks for them, into a
descriptor pool of their own: nothing here imports cuzk's generated modules,
as Curio's client knows only the .proto. It dials the way Curio does
(insecure credentials, no token, 256 MiB messages, ``dns:///`` before a bare
``host:port``), probes with GetStatus under a 5 s deadline and counts
pending + in_progress over all queues against MaxPending, proves with the
Prove RPC, and forms requests as Curio's tasks do: the request ids
(``porep-<miner>-<sector>``, WindowPoSt's ``wdpost-<miner>-<partition>-<%d of
randomness[:8]>`` with partition always 0, proofshare's
``ps-snap-<miner>-<sector>-<task>``), the fields each task sets and the ones
it leaves out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PROTO = Path(__file__).resolve().parents[2] / "src" / "cuzk" / "service" / "proto" / "proving.proto"
SERVICE = "/cuzk.v1.ProvingEngine/"
MAX_MSG = 256 << 20  # Curio's MaxCallRecvMsgSize / MaxCallSendMsgSize


@dataclass
class Stubs:
    messages: dict[str, Any]  # message name -> class
    enums: dict[str, dict[str, int]]  # enum name (nested: Outer.Inner) -> {value name: number}

    def __getattr__(self, name: str) -> Any:
        try:
            return self.messages[name]
        except KeyError:
            raise AttributeError(name) from None


def build_stubs(workdir: Path) -> Stubs:
    """Compile proving.proto with protoc (grpcio-tools) into a private pool."""
    from grpc_tools import protoc

    out = workdir / "proving.desc"
    args = ["protoc", f"-I{PROTO.parent}", f"--descriptor_set_out={out}", PROTO.name]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc could not compile {PROTO}")
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    (fd,) = [pool.FindFileByName(f.name) for f in files.file]
    messages = {
        name: message_factory.GetMessageClass(desc)
        for name, desc in fd.message_types_by_name.items()
    }
    enums = {
        name: {v.name: v.number for v in e.values} for name, e in fd.enum_types_by_name.items()
    }
    for name, desc in fd.message_types_by_name.items():
        for e in desc.enum_types:
            enums[f"{name}.{e.name}"] = {v.name: v.number for v in e.values}
    return Stubs(messages, enums)


def go_bytes_d(b: bytes) -> str:
    """Go's ``fmt.Sprintf("%d", []byte)``: ``[1 2 3]``."""
    return "[" + " ".join(str(x) for x in b) + "]"


class CurioClient:
    def __init__(self, stubs: Stubs, addr: str, max_pending: int = 10) -> None:
        self.stubs = stubs
        self.max_pending = max_pending
        target = addr
        if "://" not in target and not target.startswith("unix:"):
            target = "dns:///" + target  # a bare host:port, as Curio's connect() does
        self.channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", MAX_MSG),
                ("grpc.max_send_message_length", MAX_MSG),
            ],
        )

    def close(self) -> None:
        self.channel.close()

    def _call(self, method: str, request: Any, response: str, timeout: float | None = None) -> Any:
        rpc = self.channel.unary_unary(
            SERVICE + method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.stubs.messages[response].FromString,
        )
        return rpc(request, timeout=timeout)

    # --- what Curio calls --------------------------------------------------------
    def get_status(self) -> Any:
        """Client.GetStatus: always under a 5 s deadline."""
        return self._call("GetStatus", self.stubs.GetStatusRequest(), "GetStatusResponse", 5.0)

    def has_capacity(self) -> int:
        """Client.HasCapacity: MaxPending less every queue's pending + in_progress."""
        status = self.get_status()
        total = sum(q.pending + q.in_progress for q in status.queues)
        return max(0, self.max_pending - total)

    def prove(self, submit: Any, timeout: float | None = None) -> Any:
        """Client.Prove: the Prove RPC; returns the AwaitProofResponse."""
        resp = self._call("Prove", self.stubs.ProveRequest(submit=submit), "ProveResponse", timeout)
        return resp.result

    # --- not Curio's, for the test itself (an operator, grpcurl) ----------------------
    def cancel(self, job_id: str) -> Any:
        req = self.stubs.CancelProofRequest(job_id=job_id)
        return self._call("CancelProof", req, "CancelProofResponse")

    def metrics(self) -> str:
        req = self.stubs.GetMetricsRequest()
        return self._call("GetMetrics", req, "GetMetricsResponse").prometheus_text

    def wait_ready(self, timeout: float = 60.0) -> Any:
        end = time.monotonic() + timeout
        while True:
            try:
                return self.get_status()
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > end:
                    raise
                time.sleep(0.1)

    # --- requests as Curio's tasks form them ----------------------------------------------
    def porep_request(
        self,
        miner: int,
        sector: int,
        wrapped_c1: bytes,
        sector_size: int,
        seal_proof: int,
    ) -> Any:
        """lib/ffi PoRepSnarkCuzk."""
        e = self.stubs.enums
        return self.stubs.SubmitProofRequest(
            request_id=f"porep-{miner}-{sector}",
            proof_kind=e["ProofKind"]["POREP_SEAL_COMMIT"],
            sector_size=sector_size,
            registered_proof=seal_proof,
            priority=e["Priority"]["NORMAL"],
            vanilla_proof=wrapped_c1,
            sector_number=sector,
            miner_id=miner,
        )

    def window_post_request(
        self,
        miner: int,
        post_proof: int,
        sector_size: int,
        randomness: bytes,
        vanilla: list[bytes],
        partition: int = 0,
    ) -> Any:
        """lib/ffi WindowPoStCuzk (tasks/window passes partition 0 for every partition)."""
        e = self.stubs.enums
        return self.stubs.SubmitProofRequest(
            request_id=f"wdpost-{miner}-{partition}-{go_bytes_d(randomness[:8])}",
            proof_kind=e["ProofKind"]["WINDOW_POST_PARTITION"],
            sector_size=sector_size,
            registered_proof=post_proof,
            priority=e["Priority"]["HIGH"],
            vanilla_proofs=vanilla,
            miner_id=miner,
            randomness=randomness,
            partition_index=partition,
        )

    def proofshare_snap_request(
        self,
        miner: int,
        sector: int,
        task: int,
        update_proof: int,
        vanilla: list[bytes],
        comm_r_old: bytes,
        comm_r_new: bytes,
        comm_d_new: bytes,
    ) -> Any:
        """tasks/proofshare computeSnap: no sector_size, the update proof type decides."""
        e = self.stubs.enums
        return self.stubs.SubmitProofRequest(
            request_id=f"ps-snap-{miner}-{sector}-{task}",
            proof_kind=e["ProofKind"]["SNAP_DEALS_UPDATE"],
            registered_proof=update_proof,
            priority=e["Priority"]["NORMAL"],
            vanilla_proofs=vanilla,
            sector_number=sector,
            miner_id=miner,
            comm_r_old=comm_r_old,
            comm_r_new=comm_r_new,
            comm_d_new=comm_d_new,
        )
