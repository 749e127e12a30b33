"""The door every gRPC call passes: per-peer connection limits and safe decoding.

:class:`Gate` wraps each method's handler so that the request arrives as
bytes and is decoded here: a frame that is not a valid protobuf message of
the method's request type is answered INVALID_ARGUMENT naming the method,
without a traceback in the log (grpc would answer UNKNOWN and log one at
ERROR for each). A call on a connection that would give its peer host more
than ``[daemon] max_connections_per_peer`` connections with calls in flight
is answered RESOURCE_EXHAUSTED (:class:`cuzk.service.limits.PeerConnections`);
the lines saying so are rate-limited.

Bodies are not queued behind each other here: a slot taken before grpc reads
a message (the interceptor sees neither the peer nor the size first) would let
one client holding two slow bodies delay every submission, a WinningPoSt's
included. What bounds a body's cost is the message size limit, admission's
parse gate (``[admission] max_parsing_bytes``), the memory given back after
a refused parse, and the malloc arenas held to two
(:func:`cuzk.engine.admission.limit_malloc_arenas`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from cuzk.engine.ratelog import RateLimitedLog
from cuzk.service.limits import PeerConnections, peer_host

log = logging.getLogger(__name__)


class Gate(grpc.aio.ServerInterceptor):
    def __init__(
        self,
        per_peer: int,
        exhausted: RateLimitedLog | None = None,
    ) -> None:
        self.peers = PeerConnections(per_peer)
        self.exhausted = exhausted or RateLimitedLog(log)
        self.refused = 0  # calls refused by the per-peer limit
        self.malformed = 0  # requests that did not decode

    async def intercept_service(
        self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        return grpc.unary_unary_rpc_method_handler(
            self._guard(details.method, handler.unary_unary, handler.request_deserializer),
            request_deserializer=None,  # the bytes: decoded in _guard
            response_serializer=handler.response_serializer,
        )

    def _guard(
        self,
        method: str,
        behavior: Callable[..., Any],
        decode: Callable[[bytes], Any] | None,
    ) -> Callable[..., Any]:
        name = method.rsplit("/", 1)[-1]

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
                call = behavior(request, context)
                del request  # the handler holds it only as long as it needs it
                return await call
            finally:
                self.peers.leave(peer)

        return admitted
