"""Between the wire (cuzk.v1 messages) and the engine's own types."""

from __future__ import annotations

from cuzk.engine.jobs import Job, JobState, Priority, ProofKind, ProofRequest
from cuzk.engine.metrics import curio_status_name
from cuzk.engine.status import DeviceStatus, EngineStatus
from cuzk.errors import InputError
from cuzk.service.proto import proving_pb2 as pb

_STATUS = {
    JobState.COMPLETED: pb.AwaitProofResponse.COMPLETED,
    JobState.FAILED: pb.AwaitProofResponse.FAILED,
    JobState.CANCELLED: pb.AwaitProofResponse.CANCELLED,
}


def request_from_pb(m: pb.SubmitProofRequest) -> ProofRequest:
    try:
        kind = ProofKind(m.proof_kind)
    except ValueError:
        raise InputError(
            "request",
            "proof_kind",
            f"unknown value {m.proof_kind} (POREP_SEAL_COMMIT=1, SNAP_DEALS_UPDATE=2, "
            f"WINDOW_POST_PARTITION=3, WINNING_POST=4, CUZK_DEMO=100)",
        ) from None
    try:
        priority = Priority(m.priority)
    except ValueError:
        raise InputError(
            "request", "priority", f"unknown value {m.priority} (LOW=1 … CRITICAL=4)"
        ) from None
    return ProofRequest(
        proof_kind=kind,
        request_id=m.request_id,
        sector_size=m.sector_size,
        registered_proof=m.registered_proof,
        priority=priority,
        vanilla_proof=m.vanilla_proof,
        vanilla_proofs=tuple(m.vanilla_proofs),
        sector_number=m.sector_number,
        miner_id=m.miner_id,
        randomness=m.randomness,
        partition_index=m.partition_index,
        comm_r_old=m.comm_r_old,
        comm_r_new=m.comm_r_new,
        comm_d_new=m.comm_d_new,
    )


def request_to_pb(r: ProofRequest) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(
        request_id=r.request_id,
        proof_kind=int(r.proof_kind),
        sector_size=r.sector_size,
        registered_proof=r.registered_proof,
        priority=int(r.priority),
        vanilla_proof=r.vanilla_proof,
        vanilla_proofs=list(r.vanilla_proofs),
        sector_number=r.sector_number,
        miner_id=r.miner_id,
        randomness=r.randomness,
        partition_index=r.partition_index,
        comm_r_old=r.comm_r_old,
        comm_r_new=r.comm_r_new,
        comm_d_new=r.comm_d_new,
    )


def await_response(job: Job, timed_out: bool) -> pb.AwaitProofResponse:
    if timed_out or not job.finished:
        return pb.AwaitProofResponse(
            job_id=job.job_id,
            status=pb.AwaitProofResponse.TIMEOUT,
            error_message=f"job is still {job.state.value.lower()}; await it again",
        )
    t = job.timings
    return pb.AwaitProofResponse(
        job_id=job.job_id,
        status=_STATUS[job.state],
        proof=job.proof if job.state == JobState.COMPLETED else b"",
        error_message=job.error if job.state != JobState.COMPLETED else "",
        queue_wait_ms=round(t.queue_wait_ms),
        srs_load_ms=round(t.srs_load_ms),
        synthesis_ms=round(t.synthesis_ms),
        gpu_compute_ms=round(t.gpu_compute_ms),
        total_ms=round(t.total_ms),
    )


def status_to_pb(s: EngineStatus) -> pb.GetStatusResponse:
    gpus = []
    for d in s.devices:
        job_id, kind = s_first(d.current_jobs)
        gpus.append(
            pb.GPUStatus(
                ordinal=d.ordinal,
                name=device_name(d),
                # A GPU reports its memory as its driver does (as Curio's daemon,
                # from nvidia-smi); the CPU device the host budget it proves within.
                vram_total_bytes=d.total_bytes or d.budget_limit,
                vram_free_bytes=(
                    d.memory_free if d.memory_free is not None else max(0, d.budget_free)
                ),
                current_job_id=job_id,
                current_proof_kind=curio_status_name(kind) if kind else "",
            )
        )
    return pb.GetStatusResponse(
        gpus=gpus,
        loaded_srs=[
            pb.SRSStatus(
                circuit_id=e.circuit_id,
                tier=int(e.tier),
                size_bytes=e.size_bytes,
                ref_count=e.ref_count,
            )
            for e in s.keys
        ],
        queues=[
            pb.QueueStatus(
                proof_kind=curio_status_name(q.proof_kind),  # Curio's: porep-c2, window-post, …
                pending=q.pending,
                in_progress=q.in_progress,
            )
            for q in s.queues
        ],
        total_proofs_completed=s.completed,
        total_proofs_failed=s.failed,
        uptime_seconds=int(s.uptime_s),
        pinned_memory_bytes=s.host_reserved,
        pinned_memory_limit_bytes=s.host_limit,
    )


def device_name(d: DeviceStatus) -> str:
    """GPUStatus.name: the device's name, and while it is out of service why and
    until when (Curio's message has no field for a device's health)."""
    if d.healthy:
        return d.name
    probe = "" if d.next_probe_s is None else f"; next probe in {d.next_probe_s:.0f} s"
    return f"{d.name} (unhealthy: {d.last_failure}{probe})"


def s_first(jobs: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    return jobs[0] if jobs else ("", "")
