"""Load against a running daemon: the reports of ``cuzk-bench batch``, ``stress``
and ``demo-service``, in the format of Curio's cuzk-bench ("=== Batch Benchmark ===").

A :class:`ProofTemplate` makes each request (a fresh demo instance each
time); :func:`run_batch` sends N with a concurrency and reports wall and
prove times and throughput; :func:`run_stress` sends streams of proofs at
Poisson arrival times for a duration and reports each stream.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
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


def run_batch(client: Client, tpl: ProofTemplate, type_name: str, count: int, conc: int) -> int:
    print("=== Batch Benchmark ===")
    print(f"proof type:  {type_name}")
    print(f"count:       {count}")
    print(f"concurrency: {conc}")
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
        if len(completions) > 1:
            # from the first completion to the last: without the pipeline's fill
            span = max(completions) - min(completions)
            print(
                f"sustained:     {span / (len(completions) - 1):.1f}s/proof "
                f"(first to last of {len(completions)} completions)"
            )
    return 0 if len(completed) == count else 1


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
