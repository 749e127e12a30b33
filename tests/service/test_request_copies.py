"""A submission's body is held once while it waits (issue 32, item 2): the frames a
call passes through (the Gate, the error mapping, the RPC) let go of the decoded
request as soon as the handler has taken what it needs from it, so that a 100 MiB
body waiting for a thread or the parse gate is not also kept as a decoded message."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

from cuzk.service.gate import Gate
from cuzk.service.server import _rpc


class Body:
    """A stand-in for a decoded request (upb's messages take no weak references)."""


class Context:
    def peer(self) -> str:
        return "ipv4:10.0.0.1:5000"

    async def abort(self, code: Any, message: str) -> None:
        raise AssertionError(f"aborted: {code} {message}")


def released(request: Body) -> weakref.ref[Body]:
    return weakref.ref(request)


def test_the_gate_keeps_no_reference_to_the_decoded_request() -> None:
    async def handler(request: Body, context: Context) -> bool:
        ref = released(request)
        del request  # what SubmitProof does once it has converted it
        gc.collect()
        return ref() is None

    admitted = Gate(per_peer=4)._guard(
        "/cuzk.v1.ProvingEngine/SubmitProof", handler, lambda raw: Body()
    )
    assert asyncio.run(admitted(b"raw", Context())) is True


def test_the_error_mapping_keeps_no_reference_to_the_request() -> None:
    class Service:
        engine = None

        @_rpc
        async def SubmitProof(self, request: Body, context: Context) -> bool:
            ref = released(request)
            del request
            gc.collect()
            return ref() is None

    call = Service().SubmitProof(Body(), Context())  # out of the assert: pytest keeps its parts
    assert asyncio.run(call) is True
