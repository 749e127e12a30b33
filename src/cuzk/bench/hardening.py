"""Issue 32's attacks, full size, against an in-process daemon (CPU backend, loopback).

Each scenario prints what the issue's acceptance asks of it::

    python -m cuzk.bench.hardening json         # 1 MiB adversarial JSON: answer time, GetStatus max
    python -m cuzk.bench.hardening bodies       # 16 x 100 MiB invalid bodies x 3 rounds: RSS
    python -m cuzk.bench.hardening retained     # 12,000 retained jobs + 32-thread status flood
    python -m cuzk.bench.hardening retained-running  # the same, the cancelled jobs being proven
    python -m cuzk.bench.hardening connections  # 21,000 idle connections, then a new client
    python -m cuzk.bench.hardening reconnect    # the same, each one closed opened again
    python -m cuzk.bench.hardening reconnect-many  # the same from 64 addresses

``--scale`` shrinks every count and size (the tests run each at a small scale).
The daemon runs in this process, so RSS is its RSS (the bodies' and the status
flood's clients run in processes of their own); run one scenario a process.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import gc
import json
import logging
import multiprocessing
import os
import resource
import selectors
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc

from cuzk.bench.hostmem import status_kib
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.admission import limit_malloc_arenas
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.service.daemon_main import freeze_startup_heap
from cuzk.service.limits import HANDSHAKE_TIMEOUT_MS
from cuzk.service.proto import proving_pb2 as pb
from cuzk.service.proto import proving_pb2_grpc as pb_grpc
from cuzk.service.server import Servers

MIB = 1 << 20
SETTLE_S = 1.0  # for floods to get going, and closed connections to be noticed
CONNECT_WAIT_S = 1.0  # a flooding client's connect is given up after this


@contextlib.contextmanager
def daemon(home: Path, batch: int = 64, **daemon_keys: Any) -> Iterator[tuple[Engine, str]]:
    cfg = Config().with_overrides(
        daemon={
            "listen": ["127.0.0.1:0"],
            "journal": str(home / "journal.sqlite"),
            **daemon_keys,
        },
        srs={"param_cache": str(home / "params")},
        memory={"total_budget": "4GiB"},
        gpus={"backend": "cpu"},
        # jobs stay queued until ``batch`` of them are there
        scheduler={"max_batch_size": batch, "max_batch_wait_ms": 600_000},
        pipeline={"synthesis_processes": 0},
    )
    limit_malloc_arenas()  # as cuzk-daemon does before its threads start
    engine = Engine(cfg)
    engine.start()
    servers = Servers(engine)
    try:
        servers.start()
        freeze_startup_heap()  # as cuzk-daemon does once it serves
        yield engine, servers.bound[0]
    finally:
        servers.stop(0.5)
        engine.stop()


def stub(addr: str) -> pb_grpc.ProvingEngineStub:
    opts = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_send_message_length", 256 * MIB)]
    return pb_grpc.ProvingEngineStub(grpc.insecure_channel(addr, options=opts))


class StatusProbe:
    """GetStatus in a loop on its own connection: the longest answer while it runs."""

    def __init__(self, addr: str) -> None:
        self.stub = stub(addr)
        self.worst = 0.0
        self.calls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            self.stub.GetStatus(pb.GetStatusRequest(), timeout=60)
            self.worst = max(self.worst, time.perf_counter() - t0)
            self.calls += 1
            time.sleep(0.005)

    def __enter__(self) -> StatusProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


class GcPauses:
    """The cyclic collector's passes while it is entered, by generation: how many, and
    the longest (ms): the pauses every thread of the process waits out."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.worst_ms = [0.0, 0.0, 0.0]
        self._t0 = 0.0

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        g = info["generation"]
        self.passes[g] += 1
        self.worst_ms[g] = max(self.worst_ms[g], (time.perf_counter() - self._t0) * 1000)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._cb)

    def report(self) -> dict[str, Any]:
        return {
            f"gc_gen{g}": {"passes": self.passes[g], "worst_ms": round(self.worst_ms[g], 1)}
            for g in range(3)
        }


def rss_mib() -> float:
    return status_kib("self", "VmRSS")[0] / 1024


def adversarial_json(size: int) -> bytes:
    """A quote followed by escaped quotes: quadratic for a backtracking string pattern."""
    return b'{"rounds": "' + b'\\"' * (size // 2) + b'"}'


def run_json(scale: float) -> dict[str, Any]:
    size = max(1024, int(MIB * scale))
    with tempfile.TemporaryDirectory() as home, daemon(Path(home)) as (_, addr):
        s = stub(addr)
        with StatusProbe(addr) as probe:
            t0 = time.perf_counter()
            try:
                s.SubmitProof(
                    pb.SubmitProofRequest(
                        proof_kind=pb.CUZK_DEMO, vanilla_proof=adversarial_json(size)
                    ),
                    timeout=600,
                )
                code = "OK"
            except grpc.RpcError as e:
                code = e.code().name
            answered = time.perf_counter() - t0
            time.sleep(0.2)
    return {
        "body_bytes": size,
        "answer": code,
        "answer_s": round(answered, 3),
        "getstatus_worst_ms": round(probe.worst * 1000, 1),
        "getstatus_calls": probe.calls,
    }


def invalid_c1(size: int) -> bytes:
    """A c1.json whose Phase1Out decodes to ``size`` bytes of JSON that is refused
    only after it is decoded (a SealCommitPhase1Output without its fields)."""
    inner = b'{"pad": [' + b"[1,2,3]," * (size // 8) + b"0]}"
    phase1 = base64.b64encode(inner).decode()
    return json.dumps({"SectorNum": 1, "Phase1Out": phase1, "SectorSize": 2048}).encode()


def run_bodies(scale: float, rounds: int = 3, concurrent: int = 16) -> dict[str, Any]:
    """The daemon's RSS (this process: the attacking clients run in a process of
    their own, so that their copies of the bodies are not counted) while
    ``concurrent`` invalid c1 bodies arrive at once, ``rounds`` times."""
    size = max(4096, int(100 * MIB * scale * 3 / 4))  # base64 makes it 100 MiB on the wire
    out: dict[str, Any] = {"body_bytes": len(invalid_c1(size)), "rounds": []}
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as home, daemon(Path(home)) as (_, addr):
        idle = rss_mib()
        out["idle_rss_mib"] = round(idle, 1)
        ours, theirs = ctx.Pipe()
        sender = ctx.Process(target=_send_bodies, args=(addr, size, concurrent, theirs))
        sender.start()
        try:
            assert ours.poll(600) and ours.recv() == "ready"
            for _ in range(rounds):
                peak = [idle]
                done = threading.Event()

                def sample(peak: list[float] = peak, done: threading.Event = done) -> None:
                    while not done.wait(0.02):
                        peak[0] = max(peak[0], rss_mib())

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                ours.send("go")
                assert ours.poll(900)
                codes = ours.recv()
                done.set()
                sampler.join()
                time.sleep(SETTLE_S)
                out["rounds"].append(
                    {
                        "answers": {c: codes.count(c) for c in set(codes)},
                        "peak_above_idle_mib": round(peak[0] - idle, 1),
                        "after_above_idle_mib": round(rss_mib() - idle, 1),
                    }
                )
            ours.send("stop")
        finally:
            sender.join(60)
            if sender.is_alive():
                sender.kill()
    return out


def _send_bodies(addr: str, size: int, concurrent: int, conn: Any) -> None:
    """The attacking clients (in a process of their own): on each "go", ``concurrent``
    SubmitProof calls at once with an invalid c1 body; their answers sent back."""
    body = invalid_c1(size)
    stubs = [stub(addr) for _ in range(concurrent)]

    def send(s: pb_grpc.ProvingEngineStub) -> str:
        req = pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=body)
        try:
            s.SubmitProof(req, timeout=600)
            return "OK"
        except grpc.RpcError as e:
            return e.code().name

    conn.send("ready")
    with ThreadPoolExecutor(concurrent) as pool:
        while conn.recv() == "go":
            conn.send(list(pool.map(send, stubs)))


def run_retained(scale: float, threads: int = 32, proving: bool = False) -> dict[str, Any]:
    """CancelProof's latency while ``threads`` clients (in processes of their own) call
    GetStatus in a loop, with 12,000 finished jobs retained. The cancelled jobs stay
    queued; with ``proving`` they are released in batches of 64 and proven meanwhile
    by the CPU backend in this process (whose Python holds the interpreter's lock
    most of the time: on a GPU that work is the device's)."""
    retained = max(100, int(12_000 * scale))
    count = max(20, int(200 * scale))
    body = demo.make_vanilla(DemoCircuit(rounds=20, words=1), 1)
    with (
        tempfile.TemporaryDirectory() as home,
        daemon(Path(home), batch=64 if proving else count + 1) as (engine, addr),
    ):
        for i in range(retained):
            res = engine.submit(
                ProofRequest(ProofKind.DEMO, request_id=f"r{i}", vanilla_proof=body)
            )
            engine.cancel(res.job_id)
        victims = [
            engine.submit(ProofRequest(ProofKind.DEMO, request_id=f"v{i}", vanilla_proof=body))
            for i in range(count)
        ]
        # the flood runs in processes of its own: its clients' Python work is not the
        # daemon's (as when Curio's nodes or a script flood it from elsewhere)
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        procs = max(1, min(4, threads // 8))
        calls = [ctx.Value("q", 0) for _ in range(procs)]
        flooders = [
            ctx.Process(target=_flood, args=(addr, threads // procs, stop, n), daemon=True)
            for n in calls
        ]
        for p in flooders:
            p.start()
        deadline = time.monotonic() + 120  # every flooder answered, then it settles
        while any(n.value < threads // procs for n in calls) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(SETTLE_S)
        s = stub(addr)
        lat = []
        flood_before = sum(n.value for n in calls)
        t_start = time.perf_counter()
        with GcPauses() as pauses:
            for v in victims:
                t0 = time.perf_counter()
                s.CancelProof(pb.CancelProofRequest(job_id=v.job_id), timeout=60)
                lat.append(time.perf_counter() - t0)
        window = time.perf_counter() - t_start
        flood_calls = sum(n.value for n in calls) - flood_before
        tracked = len(gc.get_objects())
        stop.set()
        for p in flooders:
            p.join(60)
        lat.sort()
    return {
        "retained": retained,
        "flood_threads": threads,
        "cancelled_jobs_proving": proving,
        "flood_getstatus_per_s": round(flood_calls / window),
        "cancel_p50_ms": round(statistics.median(lat) * 1000, 1),
        "cancel_p99_ms": round(lat[int(len(lat) * 0.99) - 1] * 1000, 1),
        "cancel_max_ms": round(lat[-1] * 1000, 1),
        "gc_tracked_objects": tracked,  # those frozen at start-up left out
        **pauses.report(),
    }


def _flood(addr: str, threads: int, stop: Any, calls: Any) -> None:
    """GetStatus from ``threads`` threads until ``stop`` is set (in a process of its
    own); ``calls`` counts the answers."""

    def one() -> None:
        s = stub(addr)
        while not stop.is_set():
            s.GetStatus(pb.GetStatusRequest(), timeout=60)
            with calls.get_lock():
                calls.value += 1

    workers = [threading.Thread(target=one, daemon=True) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


class LogLines:
    """Lines the daemon logs while it is entered: its Python records, and what grpc's
    core writes to the process's stderr (descriptor 2, sent to a file meanwhile)."""

    def __init__(self) -> None:
        self.records = 0
        self.core_lines = 0
        self.seconds = 0.0
        self._handler = logging.Handler()
        self._handler.emit = self._count  # type: ignore[method-assign]

    def _count(self, record: logging.LogRecord) -> None:
        self.records += 1

    def __enter__(self) -> LogLines:
        self._file = tempfile.TemporaryFile()
        sys.stderr.flush()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        logging.getLogger().addHandler(self._handler)
        self._t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.monotonic() - self._t0
        logging.getLogger().removeHandler(self._handler)
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.core_lines = self._file.read().count(b"\n")
        self._file.close()

    def per_minute(self) -> float:
        """Lines a minute; a run shorter than a minute counts its lines as that minute's."""
        return (self.records + self.core_lines) * 60 / max(self.seconds, 60.0)


def run_connections(
    scale: float, handshake_wait: bool = True, reconnect: bool = False, sources: int = 1
) -> dict[str, Any]:
    """``21,000 * scale`` TCP connections that never send a byte, held by a process of
    their own from ``sources`` loopback addresses (127.0.0.2, .3, …; the new client
    comes from 127.0.0.1); with ``reconnect`` every one the daemon closes is opened
    again at once (a reconnect flood). Then a new client's GetStatus and Prove."""
    count = max(50, int(21_000 * scale))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 2 * count + 4096)), hard))
    with (
        tempfile.TemporaryDirectory() as home,
        daemon(Path(home)) as (_, addr),
        LogLines() as lines,
    ):
        host, port = addr.rsplit(":", 1)
        # the idle connections are held by a process of their own (as from another
        # host): the daemon's descriptors are its own
        ours, theirs = multiprocessing.get_context("spawn").Pipe()
        holder = multiprocessing.get_context("spawn").Process(
            target=_hold_connections,
            args=(host, int(port), count, theirs, reconnect, sources),
            daemon=True,
        )
        holder.start()
        assert ours.poll(600)
        opened, refused = ours.recv()
        time.sleep(SETTLE_S)

        def attempt(call: Callable[[], Any]) -> str:
            try:
                call()
                return "OK"
            except grpc.RpcError as e:
                return e.code().name

        s = stub(addr)
        during = attempt(lambda: s.GetStatus(pb.GetStatusRequest(), timeout=15))
        # a client that waits for the daemon (grpc's wait_for_ready: its channel keeps
        # reconnecting until the deadline), as one whose first try failed retries
        patient = 2 * HANDSHAKE_TIMEOUT_MS / 1000 + 5
        s = stub(addr)
        t0 = time.perf_counter()
        during_waiting = attempt(
            lambda: s.GetStatus(pb.GetStatusRequest(), timeout=patient, wait_for_ready=True)
        )
        waited = time.perf_counter() - t0
        prove = pb.ProveRequest(
            submit=pb.SubmitProofRequest(
                proof_kind=pb.CUZK_DEMO,
                priority=pb.HIGH,  # not held for a batch
                vanilla_proof=demo.make_vanilla(DemoCircuit(rounds=20, words=1), 1),
            )
        )
        t0 = time.perf_counter()
        prove_waiting = attempt(lambda: s.Prove(prove, timeout=patient + 60, wait_for_ready=True))
        prove_s = time.perf_counter() - t0
        # connections that never begin their handshake are closed after its timeout
        past = "not waited"
        if handshake_wait:
            time.sleep(HANDSHAKE_TIMEOUT_MS / 1000 + SETTLE_S)
            s = stub(addr)
            past = attempt(lambda: s.GetStatus(pb.GetStatusRequest(), timeout=15))
        ours.send("close")
        assert ours.poll(120)
        reopened = ours.recv()
        holder.join(30)
        time.sleep(SETTLE_S)
        s = stub(addr)
        after = attempt(lambda: s.GetStatus(pb.GetStatusRequest(), timeout=15))
    return {
        "connections_opened": opened,
        "connect_failed": refused,
        "sources": sources,
        "reconnect": reconnect,
        "reopened_during": reopened,
        "new_client_during": during,
        "new_client_during_waiting_for_ready": during_waiting,
        "waited_s": round(waited, 1),
        "prove_during_waiting_for_ready": prove_waiting,
        "prove_s": round(prove_s, 1),
        "new_client_past_handshake_timeout": past,
        "new_client_after": after,
        "log_records": lines.records,
        "log_core_lines": lines.core_lines,
        "log_lines_per_min": round(lines.per_minute(), 1),
    }


def _hold_connections(
    host: str, port: int, count: int, conn: Any, reconnect: bool = False, sources: int = 1
) -> None:
    """Open ``count`` TCP connections that never send a byte, from ``sources`` loopback
    addresses, without waiting on any one (a connect not answered in
    CONNECT_WAIT_S is given up); with ``reconnect``, open again each one that is
    closed or given up; until told to stop."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 1024)), hard))
    sel = selectors.DefaultSelector()
    pending: dict[socket.socket, float] = {}  # connecting → since
    stats = {"refused": 0, "reopened": 0}

    def start(i: int) -> None:
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError:  # out of descriptors
            stats["refused"] += 1
            return
        sock.setblocking(False)
        try:
            sock.bind((f"127.0.0.{2 + i % sources}", 0))
            sock.connect_ex((host, port))
        except OSError:
            sock.close()
            stats["refused"] += 1
            return
        pending[sock] = time.monotonic()
        sel.register(sock, selectors.EVENT_WRITE, i)

    def step(timeout: float) -> None:
        for key, _ in sel.select(timeout):
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            if sock in pending:  # the connect ended
                del pending[sock]
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    sel.modify(sock, selectors.EVENT_READ, key.data)
                    continue
            else:
                try:
                    if sock.recv(4096):
                        continue
                except OSError:
                    pass
            sel.unregister(sock)
            sock.close()
            if reconnect:
                stats["reopened"] += 1
                start(key.data)
        now = time.monotonic()
        for sock, since in list(pending.items()):
            if now - since > CONNECT_WAIT_S:  # held back: its SYNs dropped
                del pending[sock]
                i = sel.unregister(sock).data
                sock.close()
                if reconnect:
                    stats["reopened"] += 1
                    start(i)

    for i in range(count):
        start(i)
        if i % 512 == 511:
            step(0)
    end = time.monotonic() + 2 * CONNECT_WAIT_S
    while pending and time.monotonic() < end:
        step(0.05)
    opened = len(sel.get_map()) - len(pending)
    conn.send((opened, count - opened))
    while not conn.poll(0):
        step(0.05)
    conn.recv()
    for key in list(sel.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    conn.send(stats["reopened"])


SCENARIOS: dict[str, Callable[[float], dict[str, Any]]] = {
    "json": run_json,
    "bodies": run_bodies,
    "retained": run_retained,
    "retained-running": functools.partial(run_retained, proving=True),
    "connections": run_connections,
    "reconnect": functools.partial(run_connections, reconnect=True),
    "reconnect-many": functools.partial(run_connections, reconnect=True, sources=64),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cuzk.bench.hardening", description=__doc__)
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--scale", type=float, default=1.0, help="shrink counts and sizes (0-1]")
    args = p.parse_args(argv)
    print(json.dumps(SCENARIOS[args.scenario](args.scale), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
