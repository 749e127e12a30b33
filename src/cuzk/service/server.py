"""The gRPC service: cuzk.v1.ProvingEngine over the engine, on every listen address.

Each address gets its own server: a unix socket (protected by its file
permissions) or TCP. With ``[daemon] auth_token_file`` every TCP call must
carry ``authorization: Bearer <token>``, and TLS is used when a cert and key
are configured. Without a token, plain TCP on a loopback address is served
(Curio's Go client dials ``127.0.0.1:9820`` with no credentials) with a
warning; on an address other machines can reach (Curio's own
``cuzk.example.toml`` listens on ``0.0.0.0:9820``) the daemon starts, warns,
and serves loopback peers only (:class:`LoopbackOnly`): any other peer is
answered UNAUTHENTICATED naming the line its operator adds
(``auth_token_file``, or ``allow_insecure_tcp = true`` when they mean it, a
louder warning). The HTTP status endpoint follows the same rule
(:func:`check_tcp_access`). Messages up to
``max_message_size`` (128 MiB, as in Curio: a 32GiB c1.json is ~50 MB) are
accepted both ways. Everything about the listeners (addresses, the token, the
TLS pair, a unix socket another daemon serves) is checked by
:func:`check_listeners` before the engine starts, so that a daemon that cannot
serve never touches its journal.

The servers are grpc's asyncio servers on one event loop (:class:`LoopThread`):
a caller waiting in AwaitProof or Prove is a coroutine woken by its job's end,
never a parked thread, so thousands of waiters leave GetStatus and CancelProof
answering at once. Calls' blocking work (parsing and journalling a request,
reading the engine's status) runs in thread pools: ``grpc_threads`` for
submissions and key loads, a small pool of its own for status, metrics and
cancels, so that a slow submission never delays them.

Engine errors map to gRPC status codes with the engine's message: bad input
INVALID_ARGUMENT, a kind without a circuit UNIMPLEMENTED, an unknown job
NOT_FOUND, evicting a key in use FAILED_PRECONDITION, more memory than the
budget or an ``[admission]`` limit RESOURCE_EXHAUSTED, a draining daemon
UNAVAILABLE.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import os
import socket
import ssl
import stat
import struct
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
from cuzk.service.aioloop import LoopThread
from cuzk.service.door import Door
from cuzk.service.gate import Gate
from cuzk.service.identity import ANONYMOUS, Identity, Tokens, parse_tokens
from cuzk.service.limits import (
    HANDSHAKE_TIMEOUT_MS,
    IDLE_TIMEOUT_MS,
    connection_budget,
    raise_fd_limit,
)
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


def _status_of(e: Exception) -> tuple[grpc.StatusCode, str] | None:
    for cls, code in _CODES:
        if isinstance(e, cls):
            return code, str(e)
    return None


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    """Answer engine errors with their status code and message, never a traceback."""

    @functools.wraps(method)
    async def wrapper(self: ProvingService, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            call = method(self, request, context)
            del request  # a submission's decoded body goes once it is converted
            return await call
        except Exception as e:
            known = _status_of(e)
            if known is None:  # a few a minute: a flood of one failure is one line
                self.engine.exhausted.log(
                    f"internal:{method.__name__}",
                    logging.ERROR,
                    "%s failed",
                    method.__name__,
                    exc_info=True,
                )
                known = (grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
            code, message = known
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                self.engine.metrics.rejected.labels("invalid_argument").inc()
            elif code == grpc.StatusCode.UNIMPLEMENTED:
                self.engine.metrics.rejected.labels("unsupported_kind").inc()
        await context.abort(code, message)

    return wrapper


# Calls grpc core may hold before the event loop has taken them on (see Servers._start).
PENDING_CALLS = 50_000

# Threads of the pool that answers GetStatus and GetMetrics: apart from grpc_threads,
# so that submissions being parsed never delay them.
QUICK_THREADS = 4
# Threads of the pool that answers CancelProof: apart from the status pool, so that a
# flood of GetStatus calls queued there never delays a cancel.
CONTROL_THREADS = 2


class ProvingService(pb_grpc.ProvingEngineServicer):
    """The RPCs, as coroutines on the servers' event loop."""

    def __init__(self, engine: Engine, threads: int = 8, tokens: Tokens | None = None) -> None:
        self.engine = engine
        self.tokens = tokens  # the token file's; named entries make callers' identities
        self._work = futures.ThreadPoolExecutor(threads, thread_name_prefix="grpc")
        self._quick = futures.ThreadPoolExecutor(QUICK_THREADS, thread_name_prefix="grpc-quick")
        self._control = futures.ThreadPoolExecutor(CONTROL_THREADS, thread_name_prefix="grpc-ctl")
        self.waiting = 0  # calls waiting for a job to end (AwaitProof, Prove)
        # GetStatus calls share their answers (_status): the round being computed,
        # the round its late-comers wait for, and the tasks computing them
        self._status_now: asyncio.Future[pb.GetStatusResponse] | None = None
        self._status_next: asyncio.Future[pb.GetStatusResponse] | None = None
        self._status_tasks: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        self._work.shutdown(wait=False, cancel_futures=True)
        self._quick.shutdown(wait=False, cancel_futures=True)
        self._control.shutdown(wait=False, cancel_futures=True)

    async def _work_on(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._work, fn, *args)

    async def _quickly(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._quick, fn, *args)

    async def _control_now(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._control, fn, *args)

    def _caller(self, context: Any) -> Identity:
        """Who a call comes from: the named entry its token matches; without named
        entries, or on a unix socket (no token there), the anonymous admin."""
        if self.tokens is None or not self.tokens.named:
            return ANONYMOUS
        if (context.peer() or "").startswith("unix:"):
            return ANONYMOUS
        sent = dict(context.invocation_metadata() or ()).get("authorization")
        who = self.tokens.match(sent)
        if who is None:  # BearerAuth let it through: a TCP listener without it
            raise InputError("request", "authorization", "no bearer token of a named client")
        return who

    @_rpc
    async def SubmitProof(
        self, request: pb.SubmitProofRequest, context: Any
    ) -> pb.SubmitProofResponse:
        who = self._caller(context)
        submission = convert.request_from_pb(request)
        # the message's copy of the body (upb's arena) goes now, before the call waits
        # for a thread and the parse gate: the submission holds the one copy left
        del request
        res = await self._work_on(self.engine.submit, submission, who.name)
        return pb.SubmitProofResponse(
            job_id=res.job_id, queue_position=res.queue_position, assigned_gpu=res.assigned_gpu
        )

    async def _await(self, job_id: str, timeout_ms: int, who: Identity) -> pb.AwaitProofResponse:
        """Wait for a job's end without a thread: its Completion wakes this coroutine.

        A caller that goes away cancels the coroutine (grpc.aio), which takes its
        wake-up back; ``timeout_ms`` > 0 answers TIMEOUT when it passes."""
        job = self.engine.registry.get(job_id, who.sees)
        if not job.done.is_set():
            loop = asyncio.get_running_loop()
            ended: asyncio.Future[None] = loop.create_future()

            def wake() -> None:  # in the engine's thread that ended the job
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                    loop.call_soon_threadsafe(_resolve, ended)

            job.done.add_done_callback(wake)
            self.waiting += 1
            try:
                await asyncio.wait_for(ended, timeout_ms / 1000 if timeout_ms > 0 else None)
            except TimeoutError:
                pass
            finally:
                self.waiting -= 1
                job.done.remove_done_callback(wake)
        return convert.await_response(job, not job.done.is_set())

    @_rpc
    async def AwaitProof(
        self, request: pb.AwaitProofRequest, context: Any
    ) -> pb.AwaitProofResponse:
        return await self._await(request.job_id, request.timeout_ms, self._caller(context))

    @_rpc
    async def Prove(self, request: pb.ProveRequest, context: Any) -> pb.ProveResponse:
        if not request.HasField("submit"):
            raise InputError("ProveRequest", "submit", "is missing")
        who = self._caller(context)
        submission = convert.request_from_pb(request.submit)
        del request  # as in SubmitProof
        res = await self._work_on(self.engine.submit, submission, who.name)
        return pb.ProveResponse(result=await self._await(res.job_id, 0, who))

    @_rpc
    async def CancelProof(
        self, request: pb.CancelProofRequest, context: Any
    ) -> pb.CancelProofResponse:
        who = self._caller(context)
        was_running = await self._control_now(self.engine.cancel, request.job_id, who.sees)
        return pb.CancelProofResponse(was_running=was_running)

    @_rpc
    async def GetStatus(self, request: pb.GetStatusRequest, context: Any) -> pb.GetStatusResponse:
        return await self._status()

    async def _status(self) -> pb.GetStatusResponse:
        """The engine's status, computed once for every call that arrives while one is
        being computed: they share the next round, begun when that one ends, so each
        answer is read after its call arrived, and a flood of N callers costs the
        daemon about one status a round instead of N (issue 32: 32 flooding threads
        kept the status pool and the event loop busy, and CancelProof waited)."""
        loop = asyncio.get_running_loop()
        nxt = self._status_next
        if nxt is None:
            nxt = self._status_next = loop.create_future()
            task = loop.create_task(self._status_round(nxt, self._status_now))
            self._status_tasks.add(task)
            task.add_done_callback(self._status_tasks.discard)
        return await asyncio.shield(nxt)  # one caller leaving cancels nobody else's

    async def _status_round(
        self,
        result: asyncio.Future[pb.GetStatusResponse],
        before: asyncio.Future[pb.GetStatusResponse] | None,
    ) -> None:
        if before is not None:  # begun before this round's callers came: wait it out
            await asyncio.wait([before])
        self._status_next = None  # callers from now on make the round after this one
        self._status_now = result
        try:
            answer = convert.status_to_pb(await self._quickly(self.engine.status))
        except Exception as e:
            result.set_exception(e)
            result.exception()  # retrieved here too: a round nobody waits for logs nothing
        except BaseException:  # the loop is stopping
            result.cancel()
            raise
        else:
            result.set_result(answer)

    @_rpc
    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: Any
    ) -> pb.GetMetricsResponse:
        return pb.GetMetricsResponse(prometheus_text=await self._quickly(self.engine.metrics_text))

    @_rpc
    async def PreloadSRS(
        self, request: pb.PreloadSrsRequest, context: Any
    ) -> pb.PreloadSrsResponse:
        already, ms = await self._work_on(self.engine.preload, request.circuit_id)
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=round(ms))

    @_rpc
    async def EvictSRS(self, request: pb.EvictSrsRequest, context: Any) -> pb.EvictSrsResponse:
        was_loaded, freed = await self._work_on(self.engine.evict, request.circuit_id)
        return pb.EvictSrsResponse(was_loaded=was_loaded, freed_bytes=freed)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class BearerAuth(grpc.aio.ServerInterceptor):
    """Every call must carry ``authorization: Bearer <token>`` of the token file (its
    one token, or one of its named entries: :mod:`cuzk.service.identity`)."""

    def __init__(self, token: str) -> None:
        self.tokens = parse_tokens(token)

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        sent = None
        for key, value in details.invocation_metadata or ():
            if key == "authorization":
                sent = value
        if sent is None:
            return _deny("missing bearer token: send metadata 'authorization: Bearer <token>'")
        if self.tokens.match(sent) is None:
            return _deny("bearer token does not match the daemon's auth_token_file")
        return await continuation(details)


class LoopbackOnly(grpc.aio.ServerInterceptor):
    """Calls from loopback peers only: any other is answered UNAUTHENTICATED with
    ``message`` before its request is even parsed."""

    def __init__(self, message: str) -> None:
        self.message = message

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner, parse, message = handler.unary_unary, handler.request_deserializer, self.message

        async def guarded(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
            if not is_loopback_peer(context.peer()):
                log.debug("refused %s from %s: not a loopback peer", details.method, context.peer())
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
            try:
                request = parse(raw) if parse is not None else raw
            except Exception:  # protobuf's DecodeError and its kin
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, "not a valid protobuf message"
                )
            call = inner(request, context)
            del request  # as in the Gate
            return await call

        return grpc.unary_unary_rpc_method_handler(
            guarded, response_serializer=handler.response_serializer
        )


def is_loopback_host(host: str) -> bool:
    """Whether an IP address (text) is this machine's loopback: 127.0.0.0/8, ::1, or
    an IPv4 loopback address mapped into IPv6 (a dual-stack listener's peer)."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def is_loopback_peer(peer: str) -> bool:
    """Whether grpc's peer string (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``,
    ``ipv6:%5B::1%5D:5000``) names a loopback peer; a unix socket's peer is local."""
    scheme, _, rest = peer.partition(":")
    if scheme == "unix":
        return True
    if scheme not in ("ipv4", "ipv6"):
        return False
    rest = rest.replace("%5B", "[").replace("%5D", "]")
    host = rest.rpartition(":")[0]
    return is_loopback_host(host)


def _deny(message: str) -> grpc.RpcMethodHandler:
    async def abort(request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

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


def loopback_only(d: DaemonConfig, addr: Address) -> bool:
    """Whether ``addr`` serves loopback peers only: plain TCP on an address other
    machines can reach, with neither a token nor ``allow_insecure_tcp``."""
    return (
        addr.is_tcp and not d.auth_token_file and not d.allow_insecure_tcp and not is_loopback(addr)
    )


def refusal(addr: Address, key: str = "listen", source: str = "config") -> str:
    """What a peer that is not on loopback is told by a loopback-only listener."""
    return (
        f"{addr} serves loopback peers only: [daemon] {key} has no bearer token. To serve "
        f"other hosts, the daemon's operator adds one line to [daemon] in {source}: "
        'auth_token_file = "/path/to/token" (clients then send the token; Curio\'s client '
        "does not), or allow_insecure_tcp = true (anyone who reaches the port can use it; "
        "firewall it to Curio's hosts)"
    )


def check_tcp_access(
    d: DaemonConfig, addr: Address, key: str = "listen", source: str = "config"
) -> str | None:
    """The warning to log when plain TCP is served on ``addr`` without a token; None
    when a token guards it (or it is a unix socket). An address other machines can
    reach, without a token or ``allow_insecure_tcp``, serves loopback peers only
    (:func:`loopback_only`) and says so, naming the line to add."""
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
    return (
        f"{source}: [daemon] {key} {addr} is reachable from other machines and has no "
        "bearer token: serving loopback peers only (Curio on this host); other peers are "
        "answered UNAUTHENTICATED. To serve them, add one line to [daemon]: "
        'auth_token_file = "/path/to/token" (clients then send it; Curio\'s client does '
        "not), or allow_insecure_tcp = true (anyone who reaches the port can use it)"
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
        mode = Path(path).stat().st_mode
    except OSError as e:
        raise InputError(path, "auth_token_file", f"cannot read: {e.strerror}") from e
    parse_tokens(token, path)  # one token of 16 characters or more, or named entries
    if mode & 0o077:
        log.warning(
            "%s (auth_token_file) can be read by other users (mode %o): anyone on this "
            "host can then act as Curio; chmod 600 it",
            path,
            mode & 0o777,
        )
    return token


@dataclass(frozen=True)
class TlsFiles:
    """The PEM certificate chain and key of the TCP listeners (gRPC and HTTP)."""

    cert_file: str
    key_file: str
    cert: bytes
    key: bytes

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def read_tls(d: DaemonConfig, source: str = "config") -> TlsFiles | None:
    """The TLS pair of ``d``, checked: readable, PEM, and a key that matches the
    certificate (grpc would only say "Failed to bind"). None without TLS."""
    if not d.tls_cert_file:
        return None
    texts = {}
    for key, path, marker, what in (
        ("tls_cert_file", d.tls_cert_file, b"-----BEGIN CERTIFICATE-----", "PEM certificate"),
        ("tls_key_file", d.tls_key_file, b"PRIVATE KEY-----", "PEM private key"),
    ):
        try:
            texts[key] = Path(path).read_bytes()
        except OSError as e:
            raise InputError(source, f"[daemon] {key}", f"{path}: cannot read: {e.strerror}") from e
        if marker not in texts[key]:
            raise InputError(source, f"[daemon] {key}", f"{path} is not a {what}")
    files = TlsFiles(d.tls_cert_file, d.tls_key_file, texts["tls_cert_file"], texts["tls_key_file"])
    try:
        files.server_context()
    except ssl.SSLError as e:
        if "KEY_VALUES_MISMATCH" in str(e):
            raise InputError(
                source,
                "[daemon] tls_key_file",
                f"{d.tls_key_file} does not match tls_cert_file {d.tls_cert_file} (the key of "
                "another certificate)",
            ) from None
        raise InputError(
            source,
            "[daemon] tls_cert_file",
            f"{d.tls_cert_file} with {d.tls_key_file} cannot be used: {e.reason or e}",
        ) from None
    return files


def check_socket(path: Path, source: str = "config") -> bool:
    """Whether a unix socket may be bound at ``path``: True when something stale is
    there to remove first, False when nothing is. InputError when a daemon serves
    on it (a live socket is never removed) or the path is not a socket at all."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    where = f"unix://{path}"
    if not stat.S_ISSOCK(st.st_mode):
        raise InputError(
            source, "[daemon] listen", f"{where} exists and is not a socket; move it away"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
        pid, _, _ = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (ConnectionRefusedError, FileNotFoundError):
        return True  # a socket nobody accepts on: left by a daemon that was killed
    except OSError as e:
        raise InputError(
            source, "[daemon] listen", f"{where}: cannot tell whether it is live ({e.strerror})"
        ) from None
    finally:
        probe.close()
    raise InputError(
        source,
        "[daemon] listen",
        f"{where} is live: another daemon (pid {pid}) serves on it; stop that one, or "
        "listen elsewhere",
    )


def check_listeners(d: DaemonConfig, source: str = "config") -> list[str]:
    """Everything about the listeners that can be known before the engine starts:
    the access rules (:func:`check_access`), the token file, the TLS pair, and no
    live unix socket in the way. The warnings to log; InputError for the first
    problem, so that a daemon that cannot serve never opens its journal."""
    warnings = check_access(d, source)
    if d.auth_token_file:
        read_token(d.auth_token_file)
    tls = read_tls(d, source)
    if d.auth_token_file and tls is None:
        for key, raw in [("listen", x) for x in d.listen] + [("status_listen", d.status_listen)]:
            addr = parse_address(raw) if raw else None
            if addr is not None and addr.is_tcp and not is_loopback(addr):
                warnings.append(
                    f"[daemon] {key} {addr}: the bearer token crosses the network in clear "
                    "text; set tls_cert_file and tls_key_file"
                )
    for raw in d.listen:
        addr = parse_address(raw)
        if addr.unix_path is not None:
            check_socket_folder(Path(addr.unix_path), source)
            check_socket(Path(addr.unix_path), source)
    return warnings


def check_socket_folder(path: Path, source: str = "config") -> None:
    """The socket's folder exists, or is made now (as Curio's daemon makes
    ``/run/curio``); InputError naming the way out when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(
            source,
            "[daemon] listen",
            f"unix://{path}: cannot make its folder {path.parent} ({e.strerror}); run the "
            "daemon as a user who can (Curio's unit runs it as root), or listen elsewhere "
            "(--listen unix:///path/cuzk.sock, or --no-config: a socket under $CUZK_HOME)",
        ) from None


class Servers:
    """One gRPC server per listen address, sharing one service, on one event loop."""

    def __init__(self, engine: Engine, source: str = "the daemon's config") -> None:
        self.engine = engine
        self.source = source  # the config file, named to a refused peer
        self.service = ProvingService(engine, engine.config.daemon.grpc_threads)
        self.servers: list[grpc.aio.Server] = []
        self.bound: list[str] = []  # actual addresses (a TCP port 0 resolved)
        self._sockets: list[tuple[str, int, int]] = []  # path, device, inode: ours to remove
        self._loop = LoopThread("grpc")
        self.gate = Gate(engine.config.daemon.max_connections_per_peer, engine.exhausted)
        self.door: Door | None = None  # hosts holding too many connections held back

    def waiting_calls(self) -> int:
        """Calls waiting for a job to end (AwaitProof, Prove): coroutines, not threads."""
        return self.service.waiting

    def start(self) -> None:
        d = self.engine.config.daemon
        raise_fd_limit()
        token = read_token(d.auth_token_file) if d.auth_token_file else None
        self.service.tokens = parse_tokens(token) if token is not None else None
        tls = read_tls(d)
        self._loop.start()
        try:
            self._loop.call(self._start(d, token, tls), timeout=120)
        except BaseException:
            self.stop(0)
            raise

    async def _start(self, d: DaemonConfig, token: str | None, tls: TlsFiles | None) -> None:
        tcp = sum(1 for raw in d.listen if parse_address(raw).is_tcp) + bool(d.status_listen)
        places = connection_budget(d.max_connections, tcp)
        options = [
            ("grpc.max_receive_message_length", d.max_message_size),
            ("grpc.max_send_message_length", d.max_message_size),
            ("grpc.so_reuseport", 0),
            # Calls arrive faster than the event loop takes them on when thousands of
            # callers come at once (Curio's waiters reconnecting after a restart): grpc
            # core queues them, and past 1,000 queued (its default) it starts refusing
            # them at random with CANCELLED. Queue far more; each costs a few KiB.
            ("grpc.server.max_pending_requests", PENDING_CALLS),
            ("grpc.server.max_pending_requests_hard_limit", 2 * PENDING_CALLS),
            ("grpc.server_max_unrequested_time_in_server", 300),
            # a flood of connections is refused at the door, within the descriptors
            # left for the daemon's own files (cuzk.service.limits)
            ("grpc.max_allowed_incoming_connections", places),
            ("grpc.server_handshake_timeout_ms", HANDSHAKE_TIMEOUT_MS),
            ("grpc.max_connection_idle_ms", IDLE_TIMEOUT_MS),
        ]
        for raw in d.listen:
            addr = parse_address(raw)
            interceptors: list[grpc.aio.ServerInterceptor] = []
            if addr.is_tcp:
                warning = check_tcp_access(d, addr, "listen", self.source)
                if warning:
                    log.warning("%s", warning)
                if token is not None:
                    interceptors.append(BearerAuth(token))
                elif loopback_only(d, addr):
                    interceptors.append(LoopbackOnly(refusal(addr, "listen", self.source)))
            interceptors.append(self.gate)
            server = grpc.aio.server(options=options, interceptors=interceptors)
            pb_grpc.add_ProvingEngineServicer_to_server(self.service, server)
            if addr.unix_path is not None:
                path = Path(addr.unix_path)
                path.parent.mkdir(parents=True, exist_ok=True)
                if check_socket(path):  # stale; a live one raised
                    path.unlink()
                server.add_insecure_port(f"unix://{path}")
                bound = f"unix://{path}"
            else:
                try:
                    if tls is not None:
                        creds = grpc.ssl_server_credentials([(tls.key, tls.cert)])
                        port = server.add_secure_port(addr.hostport, creds)
                    else:
                        port = server.add_insecure_port(addr.hostport)
                except RuntimeError:
                    port = 0
                if port == 0:
                    raise InputError("listen address", str(addr), "cannot bind (in use?)")
                host = addr.hostport.rpartition(":")[0]
                bound = f"{host}:{port}"
            await server.start()
            self.servers.append(server)
            if addr.unix_path is not None:
                os.chmod(addr.unix_path, 0o660)
                st = os.stat(addr.unix_path)
                self._sockets.append((addr.unix_path, st.st_dev, st.st_ino))
            self.bound.append(bound)
            log.info("listening on %s%s", bound, " (TLS)" if addr.is_tcp and tls else "")
        ports = tuple(int(b.rpartition(":")[2]) for b in self.bound if not b.startswith("unix:"))
        if ports:
            self.door = Door(
                ports, places * len(ports), d.max_connections_per_peer, self.engine.exhausted
            )
            self.door.start()

    async def _stop(self, grace: float) -> None:
        await asyncio.gather(*(s.stop(grace) for s in self.servers), return_exceptions=True)

    def stop(self, grace: float = 5.0) -> None:
        if self.door is not None:
            self.door.stop()
            self.door = None
        if self._loop.running and self.servers:
            with contextlib.suppress(Exception):
                self._loop.call(self._stop(grace), timeout=grace + 10)
        self._loop.stop()
        self.service.close()
        for path, dev, ino in self._sockets:  # ours only: never another daemon's
            with contextlib.suppress(OSError):
                st = os.stat(path)
                if (st.st_dev, st.st_ino) == (dev, ino):
                    os.unlink(path)
        self._sockets.clear()
