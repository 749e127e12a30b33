"""What ``GET /status`` and the gRPC status report: the engine's devices, keys,
queues, workers and jobs at one moment, as records (:class:`EngineStatus`), with
the JSON of Curio's ``/status`` (:meth:`EngineStatus.curio_json`) and ours
beside it. :meth:`cuzk.engine.engine.Engine.status` fills them in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cuzk.engine.jobs import Job, PartitionTrace
from cuzk.engine.keystore import KeyStatus
from cuzk.engine.metrics import curio_status_name


@dataclass(frozen=True)
class DeviceStatus:
    ordinal: int
    name: str
    backend: str
    total_bytes: int
    budget_limit: int
    budget_free: int
    current_jobs: tuple[tuple[str, str], ...]  # (job id, kind) per busy worker
    healthy: bool = True
    failures: int = 0  # device failures (errors from its backend, failed probes not counted)
    failed_over: int = 0  # partitions moved from it to other devices by those failures
    last_failure: str = ""
    unhealthy_s: float | None = None  # out of service for this long (None: healthy)
    next_probe_s: float | None = None  # its next probe in (None: healthy)
    partitions_proven: int = 0  # verified partition proofs it made
    busy_s: float = 0.0  # its workers' time proving
    workers: int = 0
    memory_free: int | None = None  # the device's free memory, as its driver says (None: CPU)
    partitions_held: int = 0  # partitions its workers have taken and not finished
    resident_keys: tuple[tuple[str, int], ...] = ()  # (circuit id, bytes reserved there)
    budget_reserved: int = 0
    budget_peak: int = 0


@dataclass(frozen=True)
class QueueStatus:
    proof_kind: str
    pending: int
    in_progress: int


@dataclass(frozen=True)
class EngineStatus:
    uptime_s: float
    devices: tuple[DeviceStatus, ...]
    keys: tuple[KeyStatus, ...]
    queues: tuple[QueueStatus, ...]
    completed: int
    failed: int
    cancelled: int
    budgets: dict[str, dict[str, int]]
    stage_depths: dict[str, int]
    gpu_workers: int
    kinds: tuple[str, ...]
    draining: bool
    host_limit: int = 0
    host_reserved: int = 0
    workers: tuple[dict[str, Any], ...] = field(default=())
    queue_depth: int = 0  # jobs accepted and not started
    completed_by_kind: dict[str, int] = field(default_factory=dict)  # our kind labels
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    pipelines: tuple[dict[str, Any], ...] = ()  # started jobs, as Curio's /status shows them
    gpu_worker_states: tuple[dict[str, Any], ...] = ()
    synthesis_workers: int = 0
    synthesis_active: int = 0
    admission: dict[str, Any] = field(default_factory=dict)  # limits and what is pending
    loading: tuple[dict[str, Any], ...] = ()  # keys on their way in now (progress)
    load_at_start: dict[str, str] = field(default_factory=dict)  # circuit -> its start load

    def curio_json(self) -> dict[str, Any]:
        """The keys of Curio's ``GET /status`` (its Rust daemon's StatusSnapshot), with
        their meaning here; ``pce`` is empty (compiled matrices are mapped from disk,
        in no budget) and Curio's ``buffers`` (its pipeline's internals) is absent."""
        return {
            "uptime_secs": round(self.uptime_s, 3),
            "memory": {
                "total_bytes": self.host_limit,
                "used_bytes": self.host_reserved,
                "available_bytes": max(0, self.host_limit - self.host_reserved),
            },
            "synthesis": {
                "max_concurrent": self.synthesis_workers,
                "active": self.synthesis_active,
            },
            "pipelines": list(self.pipelines),
            "gpu_workers": list(self.gpu_worker_states),
            "allocations": {
                "srs": [
                    {
                        "circuit_id": e.circuit_id,
                        "bytes": e.size_bytes,
                        "last_used_secs_ago": round(e.idle_s, 3),
                        "evictable": e.ref_count == 0,
                    }
                    for e in self.keys
                    if e.tier.name == "HOT"
                ],
                "pce": [],
            },
            "counters": {
                "total_completed": self.completed,
                "total_failed": self.failed,
                "completed_by_kind": {
                    curio_status_name(k): n for k, n in self.completed_by_kind.items()
                },
                "failed_by_kind": {curio_status_name(k): n for k, n in self.failed_by_kind.items()},
                "queue_depth": self.queue_depth,
            },
        }

    def to_json(self) -> dict[str, Any]:
        """Curio's keys (:meth:`curio_json`), then ours beside them."""
        return {
            **self.curio_json(),
            "uptime_seconds": round(self.uptime_s, 3),
            "draining": self.draining,
            "kinds": list(self.kinds),
            "totals": {
                "completed": self.completed,
                "failed": self.failed,
                "cancelled": self.cancelled,
            },
            "budgets": self.budgets,
            "devices": [
                {
                    "ordinal": d.ordinal,
                    "name": d.name,
                    "backend": d.backend,
                    "total_bytes": d.total_bytes,
                    "budget_limit_bytes": d.budget_limit,
                    "budget_free_bytes": d.budget_free,
                    "budget_reserved_bytes": d.budget_reserved,
                    "budget_peak_bytes": d.budget_peak,
                    "current_jobs": [{"job_id": j, "proof_kind": k} for j, k in d.current_jobs],
                    "health": "healthy" if d.healthy else "unhealthy",
                    "failures": d.failures,
                    "partitions_failed_over": d.failed_over,
                    "last_failure": d.last_failure,
                    "unhealthy_secs": _secs(d.unhealthy_s),
                    "next_probe_secs": _secs(d.next_probe_s),
                    "partitions_proven": d.partitions_proven,
                    "busy_secs": round(d.busy_s, 3),
                    "workers": d.workers,
                    "partitions_held": d.partitions_held,
                    "resident_keys": [{"circuit_id": c, "bytes": n} for c, n in d.resident_keys],
                }
                for d in self.devices
            ],
            "queues": [
                {"proof_kind": q.proof_kind, "pending": q.pending, "in_progress": q.in_progress}
                for q in self.queues
            ],
            "stages": self.stage_depths,
            "srs": [
                {
                    "circuit_id": s.circuit_id,
                    "tier": s.tier.name,
                    "size_bytes": s.size_bytes,
                    "ref_count": s.ref_count,
                    "devices": list(s.devices),
                    "idle_seconds": round(s.idle_s, 1),
                    "file": s.file,
                    "development": s.development,
                }
                for s in self.keys
            ],
            "workers": list(self.workers),
            "admission": self.admission,
            "loading": list(self.loading),
            "load_at_start": self.load_at_start,
        }


def _secs(s: float | None) -> float | None:
    return None if s is None else round(s, 3)


# A finished job stays in /status's pipelines this long, as in Curio's daemon.
PIPELINE_LINGER_S = 30.0


def shown_in_status(job: Job, now: float) -> bool:
    """Whether a job is one of /status's pipelines: started, and not finished
    longer than PIPELINE_LINGER_S ago."""
    if job.started_at is None:
        return False
    return job.finished_at is None or now - job.finished_at < PIPELINE_LINGER_S


def pipeline_entry(job: Job, now: float, mono: float) -> dict[str, Any]:
    """One job as Curio's /status lists it: its partitions and where each is."""
    parts = []
    for index in range(job.num_partitions):
        t = job.trace.get(index, PartitionTrace())
        parts.append(
            {
                "index": index,
                "state": t.state,
                "synth_ms": t.ms(t.synth_start, t.synth_end, mono),
                "gpu_ms": t.ms(t.gpu_start, t.gpu_end, mono),
            }
        )
    return {
        "job_id": job.job_id,
        "proof_kind": curio_status_name(job.kind.label),
        "started_secs_ago": round(now - (job.started_at or now), 3),
        "total_partitions": job.num_partitions,
        "partitions_done": sum(1 for p in parts if p["state"] == "done"),
        "partitions": parts,
    }
