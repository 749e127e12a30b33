"""Prometheus metrics of one engine (its own registry, not the process-global one).

Counters and histograms are updated as work happens; queue depths, budget
use and key tiers are read from the engine at scrape time, so a scrape is
always current. docs/SERVICE.md lists every metric.

Curio's Rust daemon's metrics are served under its names and label values,
so that operators' dashboards carry over: ``cuzk_proofs_completed_total`` and
``cuzk_proofs_failed_total`` (unlabelled), ``cuzk_proofs_completed`` and
``cuzk_proofs_failed`` (per ``proof_kind``: ``porep_c2``, ``snap_update``,
``window_post``, ``winning_post``), ``cuzk_queue_depth`` (unlabelled),
``cuzk_proof_duration_seconds`` (``_sum``/``_count`` per ``proof_kind``; a
histogram here, a summary there), ``cuzk_uptime_seconds``,
``cuzk_running_jobs`` and ``cuzk_gpu_workers``. Ours stand beside them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

# The *_created series only restate the start time; they are noise to an operator.
disable_created_metrics()

STAGE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)


# Curio's names of the proof kinds (our labels: porep, snap, wpost, winning, demo):
# the label values of its metrics, and the keys of its /status counters.
CURIO_METRIC_LABELS = {
    "porep": "porep_c2",
    "snap": "snap_update",
    "wpost": "window_post",
    "winning": "winning_post",
}
CURIO_STATUS_NAMES = {
    "porep": "porep-c2",
    "snap": "snap-update",
    "wpost": "window-post",
    "winning": "winning-post",
}


def curio_metric_label(kind: str) -> str:
    return CURIO_METRIC_LABELS.get(kind, kind)


def curio_status_name(kind: str) -> str:
    return CURIO_STATUS_NAMES.get(kind, kind)


class _Live(Collector):
    def __init__(self, snapshot: Callable[[], Any]) -> None:
        self._snapshot = snapshot

    def describe(self) -> list[Any]:
        return []  # read at scrape time only (the engine may not be built yet)

    def collect(self) -> Iterator[Any]:
        s = self._snapshot()
        up = GaugeMetricFamily("cuzk_uptime_seconds", "Seconds since the daemon started")
        up.add_metric([], s.uptime_s)
        yield up
        depth = GaugeMetricFamily(
            "cuzk_stage_queue_depth", "Partitions waiting per pipeline stage", labels=["stage"]
        )
        for stage, n in s.stage_depths.items():
            depth.add_metric([stage], n)
        yield depth
        queued = GaugeMetricFamily(
            "cuzk_queue_depth", "Jobs accepted and not started yet (Curio's metric)"
        )
        queued.add_metric([], s.queue_depth)
        yield queued
        completed = CounterMetricFamily(
            "cuzk_proofs_completed", "Proofs completed, all kinds (Curio's metric)"
        )
        completed.add_metric([], s.completed)
        yield completed
        failed = CounterMetricFamily(
            "cuzk_proofs_failed", "Proofs failed, all kinds (Curio's metric)"
        )
        failed.add_metric([], s.failed)
        yield failed
        jobs = GaugeMetricFamily(
            "cuzk_jobs", "Jobs pending or running, per proof kind", labels=["proof_kind", "state"]
        )
        for q in s.queues:
            jobs.add_metric([q.proof_kind, "pending"], q.pending)
            jobs.add_metric([q.proof_kind, "running"], q.in_progress)
        yield jobs
        running = GaugeMetricFamily("cuzk_running_jobs", "Jobs with a partition in flight")
        running.add_metric([], sum(q.in_progress for q in s.queues))
        yield running
        workers = GaugeMetricFamily("cuzk_gpu_workers", "Proving workers, over all devices")
        workers.add_metric([], s.gpu_workers)
        yield workers
        limit = GaugeMetricFamily("cuzk_memory_budget_bytes", "Budget limit", labels=["budget"])
        used = GaugeMetricFamily(
            "cuzk_memory_reserved_bytes", "Bytes reserved now", labels=["budget"]
        )
        peak = GaugeMetricFamily(
            "cuzk_memory_peak_bytes", "Most bytes ever reserved at once", labels=["budget"]
        )
        waits = CounterMetricFamily(
            "cuzk_memory_waits", "Reservations that had to wait for memory", labels=["budget"]
        )
        overdrawn = GaugeMetricFamily(
            "cuzk_memory_overdrawn_bytes",
            "Largest overdraw of an engine reservation by the backend (its estimate was short)",
            labels=["budget"],
        )
        kept = GaugeMetricFamily(
            "cuzk_memory_kept_bytes",
            "Bytes of the budget kept for time-critical proofs ([gpus] time_critical_vram)",
            labels=["budget"],
        )
        for name, b in s.budgets.items():
            limit.add_metric([name], b["limit_bytes"])
            kept.add_metric([name], b.get("kept_bytes", 0))
            used.add_metric([name], b["reserved_bytes"])
            peak.add_metric([name], b["peak_bytes"])
            waits.add_metric([name], b["waits"])
            if "overdrawn_bytes" in b:
                overdrawn.add_metric([name], b["overdrawn_bytes"])
        yield limit
        yield used
        yield peak
        yield waits
        yield overdrawn
        yield kept
        adm = getattr(s, "admission", None)  # a snapshot without it (tests) has none
        if adm:
            pending = GaugeMetricFamily(
                "cuzk_admission_pending",
                "Jobs accepted and not finished, and the request bytes they hold ([admission])",
                labels=["proof_kind", "what"],
            )
            for kind, p in adm["by_kind"].items():
                pending.add_metric([kind, "jobs"], p["jobs"])
                pending.add_metric([kind, "bytes"], p["bytes"])
            yield pending
            limits = GaugeMetricFamily(
                "cuzk_admission_limit", "The [admission] limits", labels=["limit"]
            )
            for name, value in adm["limits"].items():
                limits.add_metric([name], value)
            yield limits
        yield from _device_families(getattr(s, "devices", ()))
        srs = GaugeMetricFamily(
            "cuzk_srs_bytes", "Proving key size by tier", labels=["circuit_id", "tier"]
        )
        refs = GaugeMetricFamily(
            "cuzk_srs_refs", "Partitions in flight using a key", labels=["circuit_id"]
        )
        for e in s.keys:
            srs.add_metric([e.circuit_id, e.tier.name.lower()], e.size_bytes)
            refs.add_metric([e.circuit_id], e.ref_count)
        yield srs
        yield refs


def _device_families(devices: Any) -> Iterator[Any]:
    """Per device (label ``device``: its ordinal): health, work, failures, keys."""
    healthy = GaugeMetricFamily(
        "cuzk_device_healthy",
        "1 while the device takes work; 0 after a device failure, until a probe passes",
        labels=["device"],
    )
    failures = CounterMetricFamily(
        "cuzk_device_failures", "Device failures (errors from its backend)", labels=["device"]
    )
    failed_over = CounterMetricFamily(
        "cuzk_device_partitions_failed_over",
        "Partitions moved from the device to another by its failures",
        labels=["device"],
    )
    proven = CounterMetricFamily(
        "cuzk_device_partitions_proven",
        "Partition proofs the device made that verified",
        labels=["device"],
    )
    busy = CounterMetricFamily(
        "cuzk_device_busy_seconds", "Time the device's workers spent proving", labels=["device"]
    )
    held = GaugeMetricFamily(
        "cuzk_device_partitions_held",
        "Partitions the device's workers have taken and not finished",
        labels=["device"],
    )
    keys = GaugeMetricFamily(
        "cuzk_device_key_bytes",
        "Bytes reserved on the device for a resident proving key",
        labels=["device", "circuit_id"],
    )
    for d in devices:
        o = str(d.ordinal)
        healthy.add_metric([o], 1 if d.healthy else 0)
        failures.add_metric([o], d.failures)
        failed_over.add_metric([o], d.failed_over)
        proven.add_metric([o], d.partitions_proven)
        busy.add_metric([o], d.busy_s)
        held.add_metric([o], d.partitions_held)
        for cid, nbytes in d.resident_keys:
            keys.add_metric([o, cid], nbytes)
    yield from (healthy, failures, failed_over, proven, busy, held, keys)


class EngineMetrics:
    def __init__(self, snapshot: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.proofs = Counter(
            "cuzk_proofs",
            "Jobs finished, by proof kind and final status",
            ["proof_kind", "status"],
            registry=r,
        )
        # Per kind, Curio's way: a counter family without the _total suffix, written
        # by hand (prometheus_client adds the suffix; Curio's dashboards expect none).
        self._lock = threading.Lock()
        self.completed_by_kind: dict[str, int] = {}
        self.failed_by_kind: dict[str, int] = {}
        self.submitted = Counter(
            "cuzk_jobs_submitted", "Jobs accepted", ["proof_kind", "priority"], registry=r
        )
        self.rejected = Counter(
            "cuzk_requests_rejected", "Requests refused at submission", ["reason"], registry=r
        )
        self.partitions = Counter(
            "cuzk_partitions_proven",
            "Partition proofs made and verified",
            ["proof_kind"],
            registry=r,
        )
        self.stage = Histogram(
            "cuzk_stage_duration_seconds",
            "Seconds per pipeline stage (queue, srs_load, synthesis, gpu, verify per "
            "partition; total per job)",
            ["stage", "proof_kind"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.prover_step = Histogram(
            "cuzk_prover_step_seconds",
            "Seconds per step of a partition's proof on its device (spmv, h_poly, "
            "msm_g1, msm_g2, assemble; upload, gather, msm_h, msm_l, msm_a, msm_b_g1; "
            "witness: the assignment made on the device)",
            ["step", "proof_kind"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.proof_duration = Histogram(
            "cuzk_proof_duration_seconds",
            "Submission to verified proof, per job (proof_kind as Curio's: porep_c2, …)",
            ["proof_kind"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        r.register(_Live(snapshot))

    def observe_prover(self, step: str, kind: str, seconds: float) -> None:
        """One step of one partition's proof (groth16.prover.StageTimes: the stages
        and the finer steps: upload, gather, each MSM)."""
        self.prover_step.labels(step, kind).observe(max(0.0, seconds))

    def observe_stage(self, stage: str, kind: str, seconds: float) -> None:
        self.stage.labels(stage, kind).observe(max(0.0, seconds))

    def job_finished(self, kind: str, status: str, seconds: float) -> None:
        """A job ended (``status``: completed, failed, cancelled) after ``seconds``."""
        self.proofs.labels(kind, status).inc()
        if status == "completed":
            self.proof_duration.labels(curio_metric_label(kind)).observe(max(0.0, seconds))
            self.observe_stage("total", kind, seconds)
        if status in ("completed", "failed"):
            counts = self.completed_by_kind if status == "completed" else self.failed_by_kind
            with self._lock:
                counts[kind] = counts.get(kind, 0) + 1

    def by_kind(self) -> tuple[dict[str, int], dict[str, int]]:
        """(completed, failed) per proof kind (our labels)."""
        with self._lock:
            return dict(self.completed_by_kind), dict(self.failed_by_kind)

    def _curio_per_kind_text(self) -> str:
        completed, failed = self.by_kind()
        out = []
        for name, what, counts in (
            ("cuzk_proofs_completed", "completions", completed),
            ("cuzk_proofs_failed", "failures", failed),
        ):
            out.append(f"# HELP {name} Per proof-kind {what} (Curio's metric)")
            out.append(f"# TYPE {name} counter")
            for kind, n in sorted(counts.items()):
                out.append(f'{name}{{proof_kind="{curio_metric_label(kind)}"}} {n}')
        return "\n".join(out) + "\n"

    def text(self) -> str:
        return generate_latest(self.registry).decode() + self._curio_per_kind_text()
