"""A client of cuzk.v1.ProvingEngine: unix socket or TCP, bearer token, TLS.

Used by ``cuzk-bench`` and the tests; any gRPC client of the .proto (Curio's
Go client among them) works the same way.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import grpc

from cuzk.engine.config import (
    CURIO_LISTEN,
    MIB,
    Config,
    default_config_path,
    load_config,
)
from cuzk.engine.jobs import ProofRequest
from cuzk.errors import CuzkError
from cuzk.service import convert
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc
from cuzk.service.server import parse_address


def default_address() -> str:
    """Where a daemon started on its defaults listens: ``$CUZK_ADDR``; else the
    first listen address of the config the daemon reads by default (Curio's
    ``/data/zk/cuzk.toml``; ``0.0.0.0`` dialled as ``127.0.0.1``); else Curio's
    socket (the daemon with no config file), or the built-in one under
    ``$CUZK_HOME`` (``--no-config``) when only that one exists."""
    env = os.environ.get("CUZK_ADDR")
    if env:
        return env
    path = default_config_path()
    if path is not None:
        try:
            return dialable(load_config(path).daemon.listen[0])
        except CuzkError:
            pass  # the daemon would not start on it either; fall back to the sockets
    builtin = Config().daemon.listen[0]
    for addr in (CURIO_LISTEN, builtin):
        if Path(parse_address(addr).unix_path or "").is_socket():
            return addr
    return CURIO_LISTEN


def dialable(listen: str) -> str:
    """A listen address as a client dials it: a wildcard host as loopback."""
    a = parse_address(listen)
    if a.hostport is None:
        return listen
    host, _, port = a.hostport.rpartition(":")
    local = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}
    return f"{local.get(host, host)}:{port}"


class Client:
    def __init__(
        self,
        addr: str | None = None,
        token: str | None = None,
        token_file: str | None = None,
        tls_ca_file: str | None = None,
        tls: bool | None = None,
        max_message_size: int = 128 * MIB,
        tls_server_name: str | None = None,
    ) -> None:
        addr = addr or default_address()
        a = parse_address(addr)
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_size),
            ("grpc.max_send_message_length", max_message_size),
        ]
        if token is None and token_file:
            token = Path(token_file).read_text().strip()
        if token is None and a.is_tcp:
            token = os.environ.get("CUZK_TOKEN") or None
        self._metadata = [("authorization", f"Bearer {token}")] if token else None
        use_tls = tls if tls is not None else (addr.startswith("https://") or bool(tls_ca_file))
        if a.unix_path is not None:
            self.channel = grpc.insecure_channel(f"unix://{a.unix_path}", options=options)
        elif use_tls:
            roots = Path(tls_ca_file).read_bytes() if tls_ca_file else None
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            creds = grpc.ssl_channel_credentials(root_certificates=roots)
            self.channel = grpc.secure_channel(a.hostport, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(a.hostport, options=options)
        self.stub = pb_grpc.ProvingEngineStub(self.channel)
        self.address = str(a)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: Any, timeout: float | None = None) -> Any:
        return getattr(self.stub, method)(request, metadata=self._metadata, timeout=timeout)

    # --- the API ----------------------------------------------------------------
    def submit(self, request: ProofRequest | pb.SubmitProofRequest) -> pb.SubmitProofResponse:
        m = (
            request
            if isinstance(request, pb.SubmitProofRequest)
            else convert.request_to_pb(request)
        )
        return self._call("SubmitProof", m)

    def await_proof(self, job_id: str, timeout_ms: int = 0) -> pb.AwaitProofResponse:
        return self._call("AwaitProof", pb.AwaitProofRequest(job_id=job_id, timeout_ms=timeout_ms))

    def prove(self, request: ProofRequest | pb.SubmitProofRequest) -> pb.AwaitProofResponse:
        m = (
            request
            if isinstance(request, pb.SubmitProofRequest)
            else convert.request_to_pb(request)
        )
        return self._call("Prove", pb.ProveRequest(submit=m)).result

    def cancel(self, job_id: str) -> pb.CancelProofResponse:
        return self._call("CancelProof", pb.CancelProofRequest(job_id=job_id))

    def status(self, timeout: float | None = None) -> pb.GetStatusResponse:
        return self._call("GetStatus", pb.GetStatusRequest(), timeout=timeout)

    def metrics(self) -> str:
        return self._call("GetMetrics", pb.GetMetricsRequest()).prometheus_text

    def preload(self, circuit_id: str) -> pb.PreloadSrsResponse:
        return self._call("PreloadSRS", pb.PreloadSrsRequest(circuit_id=circuit_id))

    def evict(self, circuit_id: str) -> pb.EvictSrsResponse:
        return self._call("EvictSRS", pb.EvictSrsRequest(circuit_id=circuit_id))

    def wait_ready(self, timeout: float = 30.0) -> pb.GetStatusResponse:
        """GetStatus, retried until the daemon answers or ``timeout`` passes."""
        end = time.monotonic() + timeout
        while True:
            try:
                return self.status(timeout=2.0)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > end:
                    raise
                time.sleep(0.1)
