"""Submissions' bodies are read a few at a time (issue 32, item 2): grpc holds each
message whole before a handler runs, so 16 concurrent 100 MiB bodies were 16 x 3
copies at once; calls past BODY_SLOTS wait, unread, for a slot."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from cuzk.bench.hardening import daemon, invalid_c1, stub
from cuzk.service import gate
from cuzk.service.proto import proving_pb2 as pb


def test_bodies_past_the_slots_wait_unread(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gate, "BODY_SLOTS", 1)
    monkeypatch.setattr(gate, "SMALL_BODY", 0)  # this test's small bodies count as large
    with daemon(tmp_path) as (engine, addr):
        real, entered, release = engine.submit, threading.Event(), threading.Event()
        calls: list[int] = []

        def held_submit(request, client=""):
            calls.append(len(request.vanilla_proof))
            entered.set()
            release.wait(10)
            return real(request, client)

        monkeypatch.setattr(engine, "submit", held_submit)
        body = invalid_c1(4096)
        req = pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=body)

        def send() -> str:
            try:
                stub(addr).SubmitProof(req, timeout=20)
                return "OK"
            except grpc.RpcError as e:
                return e.code().name

        with ThreadPoolExecutor(3) as pool:
            answers = [pool.submit(send) for _ in range(3)]
            assert entered.wait(10)
            threading.Event().wait(0.3)  # the other two are at the daemon by now
            assert len(calls) == 1  # their bodies wait, unread, for the one slot
            release.set()
            codes = [a.result() for a in answers]
        assert codes == ["INVALID_ARGUMENT"] * 3 and len(calls) == 3
        status = stub(addr).GetStatus(pb.GetStatusRequest(), timeout=10)  # still serving
        assert status.uptime_seconds >= 0


def test_a_slot_whose_body_never_arrives_goes_back() -> None:
    async def run() -> tuple[int, int, int]:
        slots = gate.BodySlots(count=2, wait_s=0.05)
        a = await slots.take()  # its body never comes
        b = await slots.take()
        b.arrived()  # this one's did: held however long
        held = slots.in_use()
        await asyncio.sleep(0.15)
        after_wait = slots.in_use()
        b.give_back()
        b.give_back()  # once only
        a.give_back()
        return held, after_wait, slots.in_use()

    assert asyncio.run(run()) == (2, 1, 0)


def test_a_small_body_gives_its_slot_back_once_read(tmp_path: Path, monkeypatch) -> None:
    """A WinningPoSt's body never holds a slot through its parse."""
    monkeypatch.setattr(gate, "BODY_SLOTS", 1)
    with daemon(tmp_path) as (engine, addr):
        real, entered, release = engine.submit, threading.Event(), threading.Event()

        def held_submit(request, client=""):
            if not entered.is_set():
                entered.set()
                release.wait(10)
            return real(request, client)

        monkeypatch.setattr(engine, "submit", held_submit)
        req = pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=invalid_c1(4096))
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(stub(addr).SubmitProof, req, timeout=20)
            assert entered.wait(10)
            # the first is held in its parse; the second is read and answered meanwhile
            try:
                stub(addr).SubmitProof(req, timeout=10)
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
            release.set()
            try:
                first.result()
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
