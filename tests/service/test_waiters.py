"""Callers waiting on their proofs hold no thread (issue 15, item 3): with 2,000 of them
waiting in AwaitProof, GetStatus and CancelProof answer within 200 ms."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import grpc
from daemon_harness import running_daemon

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.kinds import demo
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc

WAITERS = 2000
CHANNELS = 20
SMALL = DemoCircuit(rounds=20, words=1)


def held_request() -> pb.SubmitProofRequest:
    # NORMAL demo work waits in the batch collector (max_batch_wait_ms below): it stays queued
    return pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, vanilla_proof=demo.make_vanilla(SMALL))


def timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def test_2000_waiting_callers_leave_status_and_cancel_answering(tmp_path: Path) -> None:
    with running_daemon(
        tmp_path,
        daemon={"grpc_threads": 4},
        scheduler={"max_batch_size": 64, "max_batch_wait_ms": 600_000},
    ) as d:
        c = d.client()
        awaited, *others = [c.submit(held_request()).job_id for _ in range(6)]
        channels = [grpc.insecure_channel(d.servers.bound[0]) for _ in range(CHANNELS)]
        try:
            stubs = [pb_grpc.ProvingEngineStub(ch) for ch in channels]
            calls = [
                stubs[i % CHANNELS].AwaitProof.future(pb.AwaitProofRequest(job_id=awaited))
                for i in range(WAITERS)
            ]
            end = time.monotonic() + 120
            while d.servers.waiting_calls() < WAITERS:  # every one of them is in the server
                ended = [f for f in calls if f.done()]
                assert not ended, {str(f.exception() or f.result().status) for f in ended}
                assert time.monotonic() < end, f"{d.servers.waiting_calls()} callers arrived"
                time.sleep(0.1)
            # the median of several calls: one slow call on a loaded 2-core machine is noise,
            # a parked thread pool is not (there, every call times out)
            status = [timed(c.status, 5.0) for _ in range(5)]
            cancel = [timed(c.cancel, job_id) for job_id in others]
            assert statistics.median(status) <= 0.2, status
            assert statistics.median(cancel) <= 0.2, cancel
            assert c.status().queues[0].pending == 1  # the five others were cancelled
            # and every waiter gets its answer when the job ends
            c.cancel(awaited)
            answers = [f.result(timeout=60) for f in calls]
            assert {a.status for a in answers} == {pb.AwaitProofResponse.CANCELLED}
            assert d.servers.waiting_calls() == 0
        finally:
            for ch in channels:
                ch.close()
