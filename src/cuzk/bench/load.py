"""Load against a running daemon: the reports of ``cuzk-bench batch``, ``stress``
and ``demo-service``, in the format of Curio's cuzk-bench ("=== Batch Benchmark ===").

A :class:`ProofTemplate` makes each request (a fresh demo instance each
time); :func:`run_batch` sends N with a concurrency and reports wall and
prove times and throughput, optionally with probes of another kind beside
it (:class:`Probe`: latency under load); :func:`run_stress` sends streams of
proofs at Poisson arrival times for a duration and reports each stream.
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

import grpc

from cuzk.engine.jobs import Priority, ProofKind
from cuzk.engine.kinds import demo
from cuzk.service.client import Client
from cuzk.service.proto import proving_pb2 as pb

STATUS = {0: "UNKNOWN", 1: "COMPLETED", 2: "FAILED", 3: "CANCELLED", 4: "TIMEOUT"}


@dataclass
class ProofTemplate:
    """What one bench proof sends; ``fresh()`` makes each demo proof a new instance."""

    kind: ProofKind
    base: pb.SubmitProofRequest
    demo_circuit: Any = None
    demo_partitions: int = 0

    def fresh(self, priority: Priority | None = None) -> pb.SubmitProofRequest:
        m = pb.SubmitProofRequest()
        m.CopyFrom(self.base)
        m.request_id = str(uuid.uuid4())
        if self.demo_circuit is not None:
            m.vanilla_proof = demo.make_vanilla(self.demo_circuit, self.demo_partitions)
        if priority is not None:
            m.priority = int(priority)
        return m


class Progress:
    """A live one-line progress display, only when stdout is a terminal."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = self.failed = self.in_flight = 0
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()
        self.live = sys.stdout.isatty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True) if self.live else None

    def start(self) -> None:
        if self._thread:
            self._thread.start()

    def _line(self) -> str:
        el = time.perf_counter() - self.t0
        return (
            f"  … {self.done + self.failed}/{self.total} done ({self.failed} failed), "
            f"{self.in_flight} in flight, {el:.1f}s"
        )

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            with self.lock:
                sys.stdout.write("\r\033[K" + self._line())
                sys.stdout.flush()

    def print(self, text: str) -> None:
        with self.lock:
            if self.live:
                sys.stdout.write("\r\033[K")
            print(text, flush=True)
            if self.live:
                sys.stdout.write(self._line())
                sys.stdout.flush()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            sys.stdout.write("\r\033[K")
            sys.stdout.flush()


@dataclass
class Probe:
    """Proofs of another kind sent beside a batch, one at a time over one
    persistent client (``client``, kept open for the whole run), one due every
    ``every`` seconds from the batch's start plus one interval; a probe due while
    the one before is in flight starts when it returns (``late``). Latency is
    what that client sees: submission to proof, the connection already open."""

    template: ProofTemplate
    type_name: str
    every: float
    client: Client
    walls: list[float] = field(default_factory=list)  # completed probes' latencies
    failed: list[str] = field(default_factory=list)
    late: int = 0

    def run(self, t0: float, stop: threading.Event) -> None:
        due = t0 + self.every
        while not stop.wait(max(0.0, due - time.perf_counter())):
            start = time.perf_counter()
            if start - due > 0.05 * self.every:
                self.late += 1
            try:
                r = self.client.prove(self.template.fresh())
                if r.status == pb.AwaitProofResponse.COMPLETED:
                    self.walls.append(time.perf_counter() - start)
                else:
                    self.failed.append(r.error_message or STATUS.get(r.status, "UNKNOWN"))
            except grpc.RpcError as e:
                self.failed.append(f"{e.code().name}: {e.details()}")
            due += self.every
            while due < time.perf_counter() - self.every:  # skipped while one was in flight
                due += self.every


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class BatchResult:
    count: int
    completed: int
    elapsed: float  # seconds, the whole batch
    sustained: float | None  # seconds a proof, first completion to last (None: < 2)

    @property
    def per_proof(self) -> float:
        """Seconds a proof: sustained where it was measured, else the whole batch's."""
        if self.sustained is not None:
            return self.sustained
        return self.elapsed / max(1, self.completed)


def run_batch(
    client: Client,
    tpl: ProofTemplate,
    type_name: str,
    count: int,
    conc: int,
    probe: Probe | None = None,
    baseline: bool = False,
) -> int:
    """The batch report (Curio's). With ``probe``, probes run beside the batch and
    their latencies are reported with the batch's throughput; with ``baseline``
    the batch runs alone first, and the report compares the two throughputs."""
    base = None
    if probe is not None and baseline:
        print("--- baseline: the batch alone ---")
        base = _batch(client, tpl, type_name, count, conc)
        print()
        print("--- the batch with probes ---")
    got = _batch(client, tpl, type_name, count, conc, probe)
    if probe is not None:
        _probe_report(probe, got, base)
    ok = got.completed == count and (base is None or base.completed == count)
    return 0 if ok and (probe is None or not probe.failed) else 1


def _probe_report(probe: Probe, got: BatchResult, base: BatchResult | None) -> None:
    print()
    print("=== Probe Summary ===")
    print(f"probe type:    {probe.type_name} (every {probe.every:g}s, one client)")
    done, failed = len(probe.walls), len(probe.failed)
    print(f"probes:        {done} completed, {failed} failed, {probe.late} late")
    for reason in sorted(set(probe.failed))[:3]:
        print(f"  failed: {reason}")
    if probe.walls:
        w = probe.walls
        print(
            f"latency:       p50={percentile(w, 50):.3f}s p95={percentile(w, 95):.3f}s "
            f"p99={percentile(w, 99):.3f}s max={max(w):.3f}s"
        )
    line = f"throughput:    with probes {got.per_proof:.2f}s/proof"
    if base is not None:
        loss = 100.0 * (got.per_proof - base.per_proof) / base.per_proof
        line += f", without {base.per_proof:.2f}s/proof (baseline run): {loss:+.1f}%"
    else:
        line += "; without: not measured (--baseline runs the batch alone first)"
    print(line)


def _batch(
    client: Client,
    tpl: ProofTemplate,
    type_name: str,
    count: int,
    conc: int,
    probe: Probe | None = None,
) -> BatchResult:
    print("=== Batch Benchmark ===")
    print(f"proof type:  {type_name}")
    print(f"count:       {count}")
    print(f"concurrency: {conc}")
    if probe is not None:
        print(f"probe:       {probe.type_name} every {probe.every:g}s")
    print()
    progress = Progress(count)
    results: list[tuple[int, pb.AwaitProofResponse, float]] = []
    completions: list[float] = []  # when each completed proof came back

    def one(i: int) -> tuple[int, pb.AwaitProofResponse, float]:
        with progress.lock:
            progress.in_flight += 1
        t = time.perf_counter()
        try:
            resp = client.prove(tpl.fresh())
        except grpc.RpcError as e:
            resp = pb.AwaitProofResponse(
                status=pb.AwaitProofResponse.FAILED, error_message=f"{e.code().name}: {e.details()}"
            )
        return i, resp, time.perf_counter() - t

    t0 = time.perf_counter()
    progress.start()
    stop = threading.Event()
    prober = None
    if probe is not None:
        prober = threading.Thread(target=probe.run, args=(t0, stop), name="probe", daemon=True)
        prober.start()
    with ThreadPoolExecutor(max_workers=max(1, conc)) as pool:
        futures = [pool.submit(one, i) for i in range(count)]
        for f in as_completed(futures):
            i, resp, wall = f.result()
            ok = resp.status == pb.AwaitProofResponse.COMPLETED
            if ok:
                completions.append(time.perf_counter())
            with progress.lock:
                progress.in_flight -= 1
                progress.done += ok
                progress.failed += not ok
            line = (
                f"  [{i + 1}/{count}] {STATUS.get(resp.status, 'UNKNOWN')} — {wall:.1f}s "
                f"(prove={resp.gpu_compute_ms} ms, queue={resp.queue_wait_ms} ms)"
            )
            if not ok and resp.error_message:
                line += f": {resp.error_message}"
            progress.print(line)
            results.append((i, resp, wall))
    elapsed = time.perf_counter() - t0
    stop.set()  # no probe starts after the batch; the one in flight finishes
    if prober is not None:
        prober.join()
    progress.stop()
    completed = [(r, w) for _, r, w in results if r.status == pb.AwaitProofResponse.COMPLETED]
    print()
    print("=== Batch Summary ===")
    print(f"total time:    {elapsed:.1f}s")
    print(f"completed:     {len(completed)}")
    print(f"failed:        {len(results) - len(completed)}")
    if completed:
        walls = [w for _, w in completed]
        proves = [r.gpu_compute_ms / 1000 for r, _ in completed]
        print(
            f"wall time:     avg={statistics.fmean(walls):.1f}s "
            f"min={min(walls):.1f}s max={max(walls):.1f}s"
        )
        print(
            f"prove time:    avg={statistics.fmean(proves):.1f}s "
            f"min={min(proves):.1f}s max={max(proves):.1f}s"
        )
        stages = {
            "queue": [r.queue_wait_ms for r, _ in completed],
            "key load": [r.srs_load_ms for r, _ in completed],
            "synthesis": [r.synthesis_ms for r, _ in completed],
            "prove": [r.gpu_compute_ms for r, _ in completed],
            "total": [r.total_ms for r, _ in completed],
        }
        print(
            "stages (avg):  "
            + ", ".join(f"{k}={statistics.fmean(v):.0f} ms" for k, v in stages.items())
        )
        print(
            f"throughput:    {len(completed) / elapsed * 60:.3f} proofs/min "
            f"({elapsed / len(completed):.1f}s/proof)"
        )
    sustained = None
    if len(completions) > 1:
        # from the first completion to the last: without the pipeline's fill
        sustained = (max(completions) - min(completions)) / (len(completions) - 1)
        print(
            f"sustained:     {sustained:.1f}s/proof "
            f"(first to last of {len(completions)} completions)"
        )
    return BatchResult(count, len(completed), elapsed, sustained)


def run_stress(
    client: Client,
    streams: list[tuple[str, float, Callable[[], pb.SubmitProofRequest]]],
    duration: float,
    concurrency: int,
    rng: Any,
) -> int:
    """Each (name, proofs per second, make request) stream at Poisson arrival
    times for ``duration`` seconds, at most ``concurrency`` in flight; a
    summary per stream. 0 when every proof completed."""
    # Poisson arrivals per stream, merged into one schedule.
    schedule: list[tuple[float, str, Any]] = []
    for name, rate, make in streams:
        t = rng.expovariate(rate)
        while t < duration:
            schedule.append((t, name, make))
            t += rng.expovariate(rate)
    schedule.sort(key=lambda x: x[0])
    print("=== Stress Benchmark ===")
    print(f"duration:    {duration:.0f}s")
    print(f"streams:     {', '.join(f'{n} {r * 60:.2f}/min' for n, r, _ in streams)}")
    print(f"proofs:      {len(schedule)} scheduled, at most {concurrency} in flight")
    print()
    stats: dict[str, list[tuple[bool, float, float]]] = {n: [] for n, _, _ in streams}
    lock = threading.Lock()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:

        def one(name: str, make: Any) -> None:
            t = time.perf_counter()
            try:
                r = client.prove(make())
                ok, queue = r.status == pb.AwaitProofResponse.COMPLETED, r.queue_wait_ms / 1000
            except grpc.RpcError as e:
                print(f"  {name}: {e.code().name}: {e.details()}")
                ok, queue = False, 0.0
            with lock:
                stats[name].append((ok, time.perf_counter() - t, queue))

        futures = []
        for at, name, make in schedule:
            delay = at - (time.perf_counter() - t0)
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, name, make))
        for f in futures:
            f.result()
    elapsed = time.perf_counter() - t0
    print("=== Stress Summary ===")
    print(f"total time:  {elapsed:.1f}s")
    failed = 0
    for name, rows in stats.items():
        ok = [r for r in rows if r[0]]
        failed += len(rows) - len(ok)
        if ok:
            walls = sorted(w for _, w, _ in ok)
            p95 = walls[min(len(walls) - 1, int(0.95 * len(walls)))]
            print(
                f"{name:<8} completed={len(ok)} failed={len(rows) - len(ok)} "
                f"wall avg={statistics.fmean(walls):.1f}s p95={p95:.1f}s max={walls[-1]:.1f}s "
                f"queue avg={statistics.fmean(q for _, _, q in ok):.1f}s"
            )
        else:
            print(f"{name:<8} completed=0 failed={len(rows)}")
    return 0 if failed == 0 else 1
