"""The door every gRPC call passes: per-peer connection limits and safe decoding.

:class:`Gate` wraps each method's handler so that the request arrives as
bytes and is decoded here: a frame that is not a valid protobuf message of
the method's request type is answered INVALID_ARGUMENT naming the method,
without a traceback in the log (grpc would answer UNKNOWN and log one at
ERROR for each). A call on a connection that would give its peer host more
than ``[daemon] max_connections_per_peer`` connections with calls in flight
is answered RESOURCE_EXHAUSTED (:class:`cuzk.service.limits.PeerConnections`);
the lines saying so are rate-limited.

The calls that carry a proof's inputs (SubmitProof, Prove) take one of
:data:`BODY_SLOTS` slots before grpc reads their message (:class:`BodySlots`):
grpc holds each message whole before a handler runs, and a body is held three
times over (the frame, the decoded message, the engine's request) until it is
parsed and refused or accepted; the others wait, unread, in the order they
came. A slot goes back when the submission is parsed (for Prove, before the
proof is awaited; a body under :data:`SMALL_BODY` as soon as it is read), or
after :data:`BODY_WAIT_S` if the call's body never arrives (a client that went
away, or one sending too slowly to hold it): such calls delay the submissions
behind them by up to that long each (a trade of memory for latency).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from cuzk.engine.ratelog import RateLimitedLog
from cuzk.service.limits import PeerConnections, peer_host

log = logging.getLogger(__name__)

# Submissions whose bodies are read and parsed at once (each up to max_message_size;
# 16 invalid 100 MiB bodies held 5.2-5.7 GiB at once before, issue 32).
BODY_SLOTS = 2
# A body smaller than this gives its slot back as soon as it is read (a WinningPoSt's
# or a WindowPoSt partition's): what waits is the next body, not this one's parse.
SMALL_BODY = 1 << 20
# A slot whose call's body has not arrived by then goes back (a 51 MB c1.json needs
# 4 s at 100 Mbit/s).
BODY_WAIT_S = 60.0
BODY_METHODS = frozenset({"SubmitProof", "Prove"})


class BodySlot:
    """One call's slot: given back once, by whichever comes first."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release
        self._timer: asyncio.TimerHandle | None = None
        self.held = True

    def arrived(self) -> None:
        """The body is here: the slot is held until :meth:`give_back`, however long."""
        if self._timer is not None:
            self._timer.cancel()

    def give_back(self) -> None:
        if self.held:
            self.held = False
            if self._timer is not None:
                self._timer.cancel()
            self._release()


class BodySlots:
    """At most ``count`` calls with bodies being received or parsed; the rest wait."""

    def __init__(self, count: int | None = None, wait_s: float | None = None) -> None:
        self.count = BODY_SLOTS if count is None else count
        self.wait_s = BODY_WAIT_S if wait_s is None else wait_s
        self._sem: asyncio.Semaphore | None = None  # made on the servers' loop

    def in_use(self) -> int:
        return 0 if self._sem is None else self.count - self._sem._value

    async def take(self) -> BodySlot:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.count)
        await self._sem.acquire()
        slot = BodySlot(self._sem.release)
        slot._timer = asyncio.get_running_loop().call_later(self.wait_s, slot.give_back)
        return slot


_SLOT: contextvars.ContextVar[BodySlot | None] = contextvars.ContextVar("body_slot", default=None)


def body_parsed() -> None:
    """The calling RPC's body has been parsed: its slot goes back (Prove calls this
    before it waits for the proof)."""
    slot = _SLOT.get()
    if slot is not None:
        slot.give_back()


class Gate(grpc.aio.ServerInterceptor):
    def __init__(
        self,
        per_peer: int,
        exhausted: RateLimitedLog | None = None,
        bodies: BodySlots | None = None,
    ) -> None:
        self.peers = PeerConnections(per_peer)
        self.bodies = bodies or BodySlots()
        self.exhausted = exhausted or RateLimitedLog(log)
        self.refused = 0  # calls refused by the per-peer limit
        self.malformed = 0  # requests that did not decode

    async def intercept_service(
        self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        slot = None
        if details.method.rsplit("/", 1)[-1] in BODY_METHODS:
            slot = await self.bodies.take()  # before grpc reads the body
        return grpc.unary_unary_rpc_method_handler(
            self._guard(details.method, handler.unary_unary, handler.request_deserializer, slot),
            request_deserializer=None,  # the bytes: decoded in _guard
            response_serializer=handler.response_serializer,
        )

    def _guard(
        self,
        method: str,
        behavior: Callable[..., Any],
        decode: Callable[[bytes], Any] | None,
        slot: BodySlot | None = None,
    ) -> Callable[..., Any]:
        name = method.rsplit("/", 1)[-1]

        async def guarded(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
            if slot is not None:
                slot.arrived()
                _SLOT.set(slot)
                if len(raw) < SMALL_BODY:
                    slot.give_back()
            try:
                return await admitted(raw, context)
            finally:
                if slot is not None:
                    slot.give_back()

        async def admitted(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
            peer = context.peer() or ""
            if not self.peers.enter(peer):
                self.refused += 1
                host = (peer_host(peer) or ("?", ""))[0]
                self.exhausted.warning(
                    f"peer:{host}",
                    "refused a call from %s: it has calls on %d connections already "
                    "([daemon] max_connections_per_peer)",
                    host,
                    self.peers.per_peer,
                )
                await context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"{host} has calls in flight on {self.peers.per_peer} connections "
                    "already ([daemon] max_connections_per_peer); reuse a connection",
                )
            try:
                try:
                    request = decode(raw) if decode is not None else raw
                except (DecodeError, ValueError, TypeError, RuntimeError) as e:
                    self.malformed += 1
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        f"{name}: the request is not a valid protobuf message of its type "
                        f"({type(e).__name__}: {str(e)[:200]})",
                    )
                return await behavior(request, context)
            finally:
                self.peers.leave(peer)

        return guarded
