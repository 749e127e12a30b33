"""Proof kinds the engine can prove, registered by module.

Each module in :data:`KIND_MODULES` exposes ``register(registry)``; a module
not written yet in this checkout is skipped, and requests of its kind are
answered with :class:`cuzk.engine.jobs.UnsupportedKind`. Filecoin kinds plug
in here as their circuits land (see docs/SERVICE.md, "Adding a proof kind").
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable

from cuzk.engine.jobs import ProofKind, ProofRequest, UnsupportedKind
from cuzk.engine.kinds.base import ParsedRequest, PartitionInput, ProofKindHandler, Witness
from cuzk.engine.kinds.envelopes import check_envelope
from cuzk.errors import InputError

log = logging.getLogger(__name__)

KIND_MODULES = (
    "cuzk.engine.kinds.demo",  # the built-in demo circuit
    "cuzk.engine.kinds.porep",  # PoRep C2 from c1.json (Filecoin circuits II)
    "cuzk.engine.kinds.snap",  # SnapDeals (Filecoin circuits II)
    "cuzk.engine.kinds.post",  # WinningPoSt and WindowPoSt (Filecoin circuits I)
)


class KindRegistry:
    def __init__(self) -> None:
        self._handlers: dict[ProofKind, ProofKindHandler] = {}
        self._lock = threading.Lock()

    def register(self, handler: ProofKindHandler) -> None:
        with self._lock:
            self._handlers[handler.kind] = handler

    def kinds(self) -> list[ProofKind]:
        with self._lock:
            return sorted(self._handlers)

    def handler(self, kind: ProofKind) -> ProofKindHandler:
        with self._lock:
            h = self._handlers.get(kind)
        if h is None:
            have = ", ".join(k.label for k in self.kinds()) or "none"
            raise UnsupportedKind(
                f"proof kind {kind.name} ({kind.label}) is not available in this build of "
                f"cuzk yet; kinds it proves: {have}"
            )
        return h

    def parse(
        self,
        request: ProofRequest,
        run: Callable[[ProofKindHandler, ProofRequest], ParsedRequest] | None = None,
    ) -> tuple[ProofKindHandler, ParsedRequest]:
        """The handler for a request and the request split into partitions
        (by ``run(handler, request)`` when given: a synthesis process).

        The request's envelope (sizes, lengths, the c1.json wrapper) is checked
        first (:func:`parse_checked`), so that bad input is reported as such
        even for kinds whose circuits are not registered. With ``run`` the check
        is made where the parse is: a 32GiB c1.json's check decodes its 51 MB
        of JSON (≈ 3 s of the interpreter that the GPU workers launch from).
        """
        if request.proof_kind == ProofKind.UNSPECIFIED:
            raise InputError(
                "request", "proof_kind", "is unspecified: set POREP_SEAL_COMMIT, WINNING_POST, …"
            )
        with self._lock:
            known = self._handlers.get(request.proof_kind)
        if known is None or run is None:
            decoded = check_envelope(request)
            handler = self.handler(request.proof_kind)
            return handler, handler.parse_checked(request, decoded)
        return known, run(known, request)

    def for_circuit(self, circuit_id: str) -> ProofKindHandler:
        check_circuit_id(circuit_id)
        with self._lock:
            handlers = list(self._handlers.values())
        for h in handlers:
            if h.owns(circuit_id):
                return h
        raise InputError(
            "circuit_id", circuit_id, "no registered proof kind has a circuit of that id"
        )

    def circuit_for_key_file(self, params_name: str) -> str | None:
        """The circuit id a ``.params`` file name belongs to, among the registered kinds."""
        with self._lock:
            handlers = list(self._handlers.values())
        for h in handlers:
            cid = h.circuit_for_key_file(params_name)
            if cid is not None:
                return cid
        return None


# The longest circuit id is a few dozen characters ("demo-r100000-w64", "porep-32g");
# a longer one is refused before any kind (or file name) sees it.
MAX_CIRCUIT_ID = 128


def check_circuit_id(circuit_id: str) -> None:
    """InputError for an id no circuit can have: too long, or not printable ASCII."""
    if len(circuit_id) > MAX_CIRCUIT_ID:
        raise InputError(
            "circuit_id",
            f"{circuit_id[:24]}...",
            f"{len(circuit_id)} characters, at most {MAX_CIRCUIT_ID} (ids are like "
            "porep-32g, wpost-32g, demo-r500-w2)",
        )
    if not circuit_id.isascii() or not circuit_id.isprintable() or not circuit_id:
        raise InputError("circuit_id", repr(circuit_id), "expected printable ASCII, like porep-32g")


def parse_checked(handler: ProofKindHandler, request: ProofRequest) -> ParsedRequest:
    """``request``'s envelope checked (:func:`check_envelope`), then its parse by
    ``handler``: what a synthesis process runs for :meth:`KindRegistry.parse`."""
    return handler.parse_checked(request, check_envelope(request))


def default_registry() -> KindRegistry:
    """A registry with every kind whose module exists in this checkout."""
    reg = KindRegistry()
    for name in KIND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                log.debug("proof kind module %s is not present; skipped", name)
                continue
            raise
        module.register(reg)
    return reg


__all__ = [
    "KIND_MODULES",
    "KindRegistry",
    "ParsedRequest",
    "PartitionInput",
    "ProofKindHandler",
    "Witness",
    "default_registry",
    "parse_checked",
]
