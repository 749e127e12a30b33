"""The gRPC service: cuzk.v1.ProvingEngine over the engine, on every listen address.

Each address gets its own server: a unix socket (protected by its file
permissions) or TCP. With ``[daemon] auth_token_file`` every TCP call must
carry ``authorization: Bearer <token>``, and TLS is used when a cert and key
are configured. Without a token, plain TCP is served on loopback addresses
only (Curio's Go client dials ``127.0.0.1:9820`` with no credentials), with
a warning; any other address is refused unless ``allow_insecure_tcp = true``
says the operator means it (a louder warning). The HTTP status endpoint
follows the same rule (:func:`check_tcp_access`). Messages up to
``max_message_size`` (128 MiB, as in Curio: a 32GiB c1.json is ~50 MB) are
accepted both ways.

Engine errors map to gRPC status codes with the engine's message: bad input
INVALID_ARGUMENT, a kind without a circuit UNIMPLEMENTED, an unknown job
NOT_FOUND, evicting a key in use FAILED_PRECONDITION, more memory than the
budget RESOURCE_EXHAUSTED, a draining daemon UNAVAILABLE.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from cuzk.engine.config import DaemonConfig
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import (
    InUse,
    JobNotFound,
    ShuttingDown,
    UnsupportedKind,
)
from cuzk.errors import CuzkError, InputError, ResourceError
from cuzk.service import convert
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

_CODES: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (InputError, grpc.StatusCode.INVALID_ARGUMENT),
    (UnsupportedKind, grpc.StatusCode.UNIMPLEMENTED),
    (JobNotFound, grpc.StatusCode.NOT_FOUND),
    (InUse, grpc.StatusCode.FAILED_PRECONDITION),
    (ResourceError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ShuttingDown, grpc.StatusCode.UNAVAILABLE),
    (CuzkError, grpc.StatusCode.FAILED_PRECONDITION),
]


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    """Answer engine errors with their status code and message, never a traceback."""

    @functools.wraps(method)
    def wrapper(self: ProvingService, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as e:
            for cls, code in _CODES:
                if isinstance(e, cls):
                    if code == grpc.StatusCode.INVALID_ARGUMENT:
                        self.engine.metrics.rejected.labels("invalid_argument").inc()
                    elif code == grpc.StatusCode.UNIMPLEMENTED:
                        self.engine.metrics.rejected.labels("unsupported_kind").inc()
                    context.abort(code, str(e))
            log.exception("%s failed", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")

    return wrapper


class ProvingService(pb_grpc.ProvingEngineServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @_rpc
    def SubmitProof(self, request: pb.SubmitProofRequest, context: Any) -> pb.SubmitProofResponse:
        res = self.engine.submit(convert.request_from_pb(request))
        return pb.SubmitProofResponse(
            job_id=res.job_id, queue_position=res.queue_position, assigned_gpu=res.assigned_gpu
        )

    def _await(self, job_id: str, timeout_ms: int, context: Any) -> pb.AwaitProofResponse:
        job = self.engine.registry.get(job_id)
        end = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
        # Wake up now and then so an abandoned call does not hold its thread forever.
        while not job.done.is_set():
            left = 1.0 if end is None else min(1.0, end - time.monotonic())
            if left <= 0:
                break
            job.done.wait(left)
            if not context.is_active():
                break
        return convert.await_response(job, not job.done.is_set())

    @_rpc
    def AwaitProof(self, request: pb.AwaitProofRequest, context: Any) -> pb.AwaitProofResponse:
        return self._await(request.job_id, request.timeout_ms, context)

    @_rpc
    def Prove(self, request: pb.ProveRequest, context: Any) -> pb.ProveResponse:
        if not request.HasField("submit"):
            raise InputError("ProveRequest", "submit", "is missing")
        res = self.engine.submit(convert.request_from_pb(request.submit))
        return pb.ProveResponse(result=self._await(res.job_id, 0, context))

    @_rpc
    def CancelProof(self, request: pb.CancelProofRequest, context: Any) -> pb.CancelProofResponse:
        return pb.CancelProofResponse(was_running=self.engine.cancel(request.job_id))

    @_rpc
    def GetStatus(self, request: pb.GetStatusRequest, context: Any) -> pb.GetStatusResponse:
        return convert.status_to_pb(self.engine.status())

    @_rpc
    def GetMetrics(self, request: pb.GetMetricsRequest, context: Any) -> pb.GetMetricsResponse:
        return pb.GetMetricsResponse(prometheus_text=self.engine.metrics_text())

    @_rpc
    def PreloadSRS(self, request: pb.PreloadSrsRequest, context: Any) -> pb.PreloadSrsResponse:
        already, ms = self.engine.preload(request.circuit_id)
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=round(ms))

    @_rpc
    def EvictSRS(self, request: pb.EvictSrsRequest, context: Any) -> pb.EvictSrsResponse:
        was_loaded, freed = self.engine.evict(request.circuit_id)
        return pb.EvictSrsResponse(was_loaded=was_loaded, freed_bytes=freed)


class BearerAuth(grpc.ServerInterceptor):
    """Every call must carry ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        sent = None
        for key, value in details.invocation_metadata or ():
            if key == "authorization":
                sent = value
        if sent is None:
            return _deny("missing bearer token: send metadata 'authorization: Bearer <token>'")
        scheme, _, token = sent.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self._token
        ):
            return _deny("bearer token does not match the daemon's auth_token_file")
        return continuation(details)


def _deny(message: str) -> grpc.RpcMethodHandler:
    def abort(request: Any, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return grpc.unary_unary_rpc_method_handler(abort)


@dataclass(frozen=True)
class Address:
    unix_path: str | None
    hostport: str | None

    @property
    def is_tcp(self) -> bool:
        return self.hostport is not None

    def __str__(self) -> str:
        return f"unix://{self.unix_path}" if self.unix_path else str(self.hostport)


def parse_address(addr: str) -> Address:
    """``unix:///run/cuzk.sock``, ``127.0.0.1:9820``, ``[::1]:9820``, ``http://host:port``."""
    if addr.startswith("unix://"):
        return Address(addr[len("unix://") :], None)
    if addr.startswith("unix:"):
        return Address(addr[len("unix:") :], None)
    for scheme in ("http://", "https://", "tcp://", "grpc://"):
        if addr.startswith(scheme):
            addr = addr[len(scheme) :]
    addr = addr.rstrip("/")
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError("listen address", addr, "expected unix:///path or host:port")
    return Address(None, addr)


def is_loopback(addr: Address) -> bool:
    """A TCP address only this machine can reach: 127.0.0.0/8, ::1, localhost."""
    if addr.hostport is None:
        return False
    host = addr.hostport.rpartition(":")[0].strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_tcp_access(
    d: DaemonConfig, addr: Address, key: str = "listen", source: str = "config"
) -> str | None:
    """Whether plain TCP may be served on ``addr``; the warning to log when it is
    served without a token, None when a token guards it (or it is a unix socket).

    Raises InputError naming the one line to add when ``addr`` is reachable from
    other machines and neither a token nor ``allow_insecure_tcp`` is set.
    """
    if not addr.is_tcp or d.auth_token_file:
        return None
    if is_loopback(addr):
        return (
            f"[daemon] {key} {addr}: plain TCP without a bearer token on loopback; any "
            "process on this machine can use it (set auth_token_file to require a token)"
        )
    if d.allow_insecure_tcp:
        return (
            f"INSECURE: [daemon] {key} {addr}: plain TCP without a bearer token on an "
            "address other machines can reach (allow_insecure_tcp = true); anyone who "
            "reaches it can submit proofs and read results. Firewall it to Curio's hosts."
        )
    raise InputError(
        source,
        f"[daemon] {key}",
        f"{addr} is reachable from other machines and has no bearer token. Add one line "
        f'to [daemon]: auth_token_file = "/path/to/token" (clients then send it; Curio\'s '
        "client does not), or allow_insecure_tcp = true (anyone who reaches the port can "
        "use it), or listen on 127.0.0.1 or a unix:// socket",
    )


def check_access(d: DaemonConfig, source: str = "config") -> list[str]:
    """Every listener of ``d`` checked by :func:`check_tcp_access`: the warnings to
    log, or InputError for the first that may not be served."""
    warnings = []
    for raw in d.listen:
        w = check_tcp_access(d, parse_address(raw), "listen", source)
        if w:
            warnings.append(w)
    if d.status_listen:
        w = check_tcp_access(d, parse_address(d.status_listen), "status_listen", source)
        if w:
            warnings.append(w)
    return warnings


def read_token(path: str) -> str:
    try:
        token = Path(path).read_text().strip()
    except OSError as e:
        raise InputError(path, "auth_token_file", f"cannot read: {e.strerror}") from e
    if len(token) < 16:
        raise InputError(path, "auth_token_file", "the token must be at least 16 characters")
    return token


class Servers:
    """One gRPC server per listen address, sharing one service."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.service = ProvingService(engine)
        self.servers: list[grpc.Server] = []
        self.bound: list[str] = []  # actual addresses (a TCP port 0 resolved)
        self._sockets: list[str] = []

    def start(self) -> None:
        d = self.engine.config.daemon
        options = [
            ("grpc.max_receive_message_length", d.max_message_size),
            ("grpc.max_send_message_length", d.max_message_size),
            ("grpc.so_reuseport", 0),
        ]
        token = read_token(d.auth_token_file) if d.auth_token_file else None
        for raw in d.listen:
            addr = parse_address(raw)
            interceptors: list[grpc.ServerInterceptor] = []
            if addr.is_tcp:
                warning = check_tcp_access(d, addr)
                if warning:
                    log.warning("%s", warning)
                if token is not None:
                    interceptors.append(BearerAuth(token))
            server = grpc.server(
                futures.ThreadPoolExecutor(max_workers=d.grpc_threads, thread_name_prefix="grpc"),
                options=options,
                interceptors=interceptors,
            )
            pb_grpc.add_ProvingEngineServicer_to_server(self.service, server)
            if addr.unix_path is not None:
                path = Path(addr.unix_path)
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.exists() or path.is_symlink():
                    path.unlink()  # a stale socket of an earlier run
                server.add_insecure_port(f"unix://{path}")
                self._sockets.append(str(path))
                bound = f"unix://{path}"
            else:
                if d.tls_cert_file:
                    creds = grpc.ssl_server_credentials(
                        [(Path(d.tls_key_file).read_bytes(), Path(d.tls_cert_file).read_bytes())]
                    )
                    port = server.add_secure_port(addr.hostport, creds)
                else:
                    port = server.add_insecure_port(addr.hostport)
                if port == 0:
                    raise InputError("listen address", str(addr), "cannot bind (in use?)")
                host = addr.hostport.rpartition(":")[0]
                bound = f"{host}:{port}"
            server.start()
            if addr.unix_path is not None:
                os.chmod(addr.unix_path, 0o660)
            self.servers.append(server)
            self.bound.append(bound)
            log.info(
                "listening on %s%s", bound, " (TLS)" if addr.is_tcp and d.tls_cert_file else ""
            )

    def stop(self, grace: float = 5.0) -> None:
        events = [s.stop(grace) for s in self.servers]
        for e in events:
            e.wait(grace + 1)
        for path in self._sockets:
            with contextlib.suppress(OSError):
                os.unlink(path)
