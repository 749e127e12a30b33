"""The engine: accepts jobs, schedules them through the pipeline, reports on them.

This is what the gRPC service calls; it knows nothing of gRPC. Submission
checks a request (its kind, its envelope, its partitions), journals it, and
hands it to the batch collector, which releases it to the partition queues.
The pipeline reports verified partitions back here; the job completes when
the last one arrives.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cuzk.engine.admission import (
    Admission,
    AdmissionRefused,
    ParseGate,
    request_bytes,
    return_memory,
)
from cuzk.engine.budget import Budget
from cuzk.engine.config import Config
from cuzk.engine.devices import Device, discover, prepare_kernels
from cuzk.engine.jobs import (
    Job,
    JobRegistry,
    JobState,
    Priority,
    ProofRequest,
    ShuttingDown,
    SubmitResult,
    check_request_id,
)
from cuzk.engine.journal import Journal
from cuzk.engine.keystore import KeyStore
from cuzk.engine.keystore.progress import under_way
from cuzk.engine.kinds import KindRegistry, ProofKindHandler, default_registry
from cuzk.engine.metrics import EngineMetrics
from cuzk.engine.pipeline import Pipeline
from cuzk.engine.pipeline.queues import PipelineHooks
from cuzk.engine.ratelog import RateLimitedLog
from cuzk.engine.scheduler import BatchCollector, WorkItem
from cuzk.engine.statelock import StateLock
from cuzk.engine.status import (
    PIPELINE_LINGER_S,
    DeviceStatus,
    EngineStatus,
    QueueStatus,
    pipeline_entry,
    shown_in_status,
)
from cuzk.errors import CuzkError

log = logging.getLogger(__name__)


class Engine:
    def __init__(
        self,
        config: Config,
        kinds: KindRegistry | None = None,
        devices: list[Device] | None = None,
    ) -> None:
        self.config = config
        self.kinds = kinds if kinds is not None else default_registry()
        self.devices = devices if devices is not None else discover(config.gpus)
        self.host_budget = Budget("host", config.memory.resolve_total_budget())
        self.keys = KeyStore(
            config.srs.cache_dir(),
            self.kinds,
            self.host_budget,
            self.devices,
            eviction_min_idle=config.memory.eviction_min_idle,
            generate_dev_keys=config.srs.generate_dev_keys,
            search_dirs=config.srs.search_dirs(),
            dev_key_disk_budget=config.srs.dev_key_disk_budget,
            shared_pass_partitions=config.gpus.shared_pass_partitions,
        )
        self.registry = JobRegistry(config.daemon.max_retained_jobs)
        self.admission = Admission(config.admission)
        self.parse_gate = ParseGate(config.admission.max_parsing_bytes)
        self.exhausted = RateLimitedLog(log)  # lines about limits reached, a few a minute
        self.metrics = EngineMetrics(self.status)
        self.pipeline = Pipeline(
            config,
            self.kinds,
            self.keys,
            self.devices,
            self.metrics,
            PipelineHooks(self._on_started, self._on_partition, self._on_failed),
        )
        self.batcher = BatchCollector(
            config.scheduler.max_batch_size, config.scheduler.max_batch_wait_ms, self._release
        )
        self.journal: Journal | None = None
        self._state_lock: StateLock | None = None
        self._seq = 0
        self._seq_lock = threading.Lock()
        self._submit_lock = threading.Lock()
        self._started_at = time.time()
        self._draining = False
        self._stopped = threading.Event()
        self._housekeeping: threading.Thread | None = None
        # [srs] load_at_start: circuit -> queued, loading, loaded (N s), failed: why
        self.start_loads: dict[str, str] = {}
        self.totals = {JobState.COMPLETED: 0, JobState.FAILED: 0, JobState.CANCELLED: 0}

    # --- lifecycle ----------------------------------------------------------
    def start(self, journal_path: Path | None = None) -> None:
        # Every kernel loaded (compiled on a first start) before anything else, so
        # that no proof waits on a compile; the daemon reports ready after this.
        prepare_kernels(self.devices)
        path = journal_path or self.config.daemon.journal_path()
        # One daemon per state: before anything of it is read (StateLocked names the pid).
        lock = StateLock(path)
        lock.acquire()
        self._state_lock = lock
        try:
            self.journal = Journal(path)
        except BaseException:
            lock.release()
            raise
        self.keys.discover_cached()
        self.pipeline.start()
        self.batcher.start()
        self._recover()
        self._housekeeping = threading.Thread(
            target=self._housekeep, name="housekeeping", daemon=True
        )
        self._housekeeping.start()
        if self.config.srs.load_at_start:
            order = self.start_order(self.config.srs.load_at_start)
            self.start_loads = dict.fromkeys(order, "queued")
            threading.Thread(
                target=self._load_at_start, args=(order,), name="load-at-start", daemon=True
            ).start()
        log.info(
            "engine started: devices %s, host budget %.2f GiB, kinds %s",
            [d.label for d in self.devices],
            self.host_budget.limit / 2**30,
            [k.label for k in self.kinds.kinds()],
        )

    def drain(self, timeout: float, abort: Callable[[], bool] = lambda: False) -> bool:
        """Stop accepting work and wait (at most ``timeout`` s) for accepted jobs to finish.

        What is unfinished when it returns False stays in the journal and is
        resumed at the next start.
        """
        with self._submit_lock:  # a submission under way registers its job first
            self._draining = True
        self.batcher.flush_all()
        end = time.monotonic() + timeout
        while time.monotonic() < end and not abort():
            if not self.registry.live():
                return True
            time.sleep(0.05)
        left = len(self.registry.live())
        if left:
            log.warning("stopping with %d unfinished job(s); they resume at the next start", left)
        return left == 0

    def stop(self) -> None:
        self._draining = True
        self._stopped.set()
        self.batcher.stop()
        self.pipeline.stop()
        if self.journal is not None:
            self.journal.close()
        if self._state_lock is not None:
            self._state_lock.release()

    # --- submission ---------------------------------------------------------
    def submit(self, request: ProofRequest, client: str = "") -> SubmitResult:
        """Accept ``request`` from ``client`` (its identity; "" without identities)."""
        if self._draining:
            raise ShuttingDown("the daemon is shutting down and accepts no new proofs")
        check_request_id(request.request_id)
        digest = request.digest()
        known_job = self.registry.answering(request, digest, client)
        if known_job is not None:  # before parsing: a retry's input is not read again
            return self._answer(known_job)
        kind, nbytes = request.proof_kind.label, request_bytes(request)
        ticket = None
        try:
            # Counted before parsing: a full daemon reads nothing, and requests being
            # parsed count as much as the jobs they become.
            ticket = self.admission.hold(kind, nbytes)
            job, handler = self._parse_and_journal(request, digest, ticket, nbytes, client)
        except AdmissionRefused as e:
            self.metrics.rejected.labels("admission").inc()
            self.exhausted.warning(f"admission:{e.limit}", "request refused: %s", e)
            raise
        finally:
            if ticket is not None:
                self.admission.release(ticket)  # transferred to the job when accepted
        if handler is None:  # a job that answers this request was accepted meanwhile
            return self._answer(job)
        self.metrics.submitted.labels(job.kind.label, job.priority.name).inc()
        position = self._queue_position(job)
        again = (
            f" (request_id {request.request_id} had a job already)"
            if request.request_id and job.job_id != request.request_id
            else ""
        )
        log.info(
            "job %s accepted%s: %s, %s, %d partition(s), circuit %s",
            job.job_id,
            again,
            job.kind.label,
            job.priority.name,
            job.num_partitions,
            job.circuit_id,
        )
        # the circuit's witness plan loads while the partitions are checked
        self.pipeline.warm_plan(handler, job.circuit_id)
        self.batcher.add(job, handler.batchable)
        if self._draining:  # drain flushed the batches before this job reached them
            self.batcher.flush_all()
        return SubmitResult(job.job_id, position, "", existing=False)

    def _parse_and_journal(
        self, request: ProofRequest, digest: bytes, ticket: str, nbytes: int, client: str
    ) -> tuple[Job, ProofKindHandler | None]:
        """The request parsed (within the parse gate) and its job journalled, with
        its kind; (the job, None) when a job answered it meanwhile."""
        pool = self.pipeline.synth_pool  # off the interpreter the GPU workers use
        try:
            with self.parse_gate.parsing(nbytes):
                handler, parsed = self.kinds.parse(
                    request, pool.parse if pool is not None else None
                )
        except BaseException as e:
            # the decoded document lives on in the raising frames' locals, as long as
            # the error does (a pool's future, a log record): let go of it now
            traceback.clear_frames(e.__traceback__)
            raise
        finally:  # what the parse held (all of a refused body's) goes back
            return_memory(nbytes)
        with self._submit_lock:
            if self._draining:  # checked again where drain sees the registry
                raise ShuttingDown("the daemon is shutting down and accepts no new proofs")
            job, known = self.registry.new_job(request, digest=digest, client=client)
            if known:
                return job, None
            self.admission.transfer(ticket, job.job_id)
            job.parsed = parsed
            job.circuit_id = parsed.circuit_id
            job.num_partitions = len(parsed.partitions)
            assert self.journal is not None
            try:
                self.journal.insert(job)  # durable before acknowledged
            except BaseException:
                self.admission.release(job.job_id)
                raise
            self.registry.add(job)
        return job, handler

    def _answer(self, job: Job) -> SubmitResult:
        """A request that ``job`` answers (same request_id and content; queued,
        running or COMPLETED): its job, not a new one."""
        log.info(
            "request %s answered by job %s (%s)",
            job.request.request_id,
            job.job_id,
            job.state.value,
        )
        return SubmitResult(job.job_id, self._queue_position(job), job.device, existing=True)

    def _queue_position(self, job: Job) -> int:
        if job.state != JobState.QUEUED:
            return 0
        return sum(
            1
            for j in self.registry.live()
            if j is not job
            and j.state == JobState.QUEUED
            and j.priority >= job.priority
            and j.submitted_at <= job.submitted_at
        )

    def _release(self, jobs: list[Job]) -> None:
        """Batch collector → partition queue."""
        for job in jobs:
            if job.finished:
                continue
            with self._seq_lock:
                self._seq += 1
                seq = self._seq
            parsed = job.parsed
            if parsed is None:  # finished meanwhile
                continue
            for part in parsed.partitions:
                self.pipeline.pending.put(WorkItem(job, part.index, part.data, seq))

    # --- results --------------------------------------------------------------
    def await_job(
        self, job_id: str, timeout_s: float | None = None, client: str | None = None
    ) -> tuple[Job, bool]:
        """(job, timed_out). ``timeout_s`` None or 0 waits until the job ends;
        ``client`` (None: an admin) waits on its own jobs only."""
        job = self.registry.get(job_id, client)
        finished = job.done.wait(timeout_s if timeout_s else None)
        return job, not finished

    def prove(self, request: ProofRequest) -> Job:
        res = self.submit(request)
        job, _ = self.await_job(res.job_id)
        return job

    def cancel(self, job_id: str, client: str | None = None) -> bool:
        """Cancel a job (``client``'s own; None: an admin, any). Returns whether it was
        running (had a partition in flight)."""
        job = self.registry.get(job_id, client)
        with self.registry.lock:
            if job.finished:
                return False
            was_running = job.state == JobState.RUNNING
            self._finish(job, JobState.CANCELLED, "cancelled by request")
        self.batcher.remove(job_id)
        dropped = self.pipeline.drop_job(job_id)
        log.info(
            "job %s cancelled (%s; %d queued partitions dropped)",
            job_id,
            "running" if was_running else "queued",
            dropped,
        )
        return was_running

    # --- pipeline callbacks -----------------------------------------------------
    def _on_started(self, job: Job) -> None:
        with self.registry.lock:
            if job.state == JobState.QUEUED:
                job.state = JobState.RUNNING
                job.started_at = time.time()
                job.timings.queue_wait_ms = job.elapsed_ms()

    def _on_partition(self, job: Job, item: WorkItem) -> None:
        with self.registry.lock:
            if job.finished:
                return
            job.partition_proofs[item.index] = item.proof.to_bytes()
            if len(job.partition_proofs) < job.num_partitions:
                return
            handler = self.kinds.handler(job.kind)
            job.proof = handler.assemble(
                [job.partition_proofs[i] for i in range(job.num_partitions)]
            )
            self._finish(job, JobState.COMPLETED, "")

    def _on_failed(self, job: Job, reason: str) -> None:
        with self.registry.lock:
            if job.finished:
                return
            self._finish(job, JobState.FAILED, reason)
        self.pipeline.drop_job(job.job_id)

    def _finish(self, job: Job, state: JobState, error: str) -> None:
        """Called with the registry lock held."""
        job.state = state
        job.error = error
        job.finished_at = time.time()
        job.timings.total_ms = job.elapsed_ms()
        self.admission.release(job.job_id)
        job.partition_proofs = {} if state != JobState.COMPLETED else job.partition_proofs
        self.totals[state] += 1
        forgotten = self.registry.ended(job)  # past max_retained_jobs: the oldest go
        self.metrics.job_finished(job.kind.label, state.value.lower(), job.timings.total_ms / 1000)
        if self.journal is not None:
            try:
                self.journal.finish(job, forget=forgotten)
            except Exception:
                log.exception("journal: cannot record the end of job %s", job.job_id)
        # What a finished job no longer needs: its parsed input and vanilla bytes
        # (the digest stays, for idempotent re-submission).
        job.parsed = None
        job.request = replace(job.request, vanilla_proof=b"", vanilla_proofs=())
        job.done.set()
        if state == JobState.FAILED:
            log.warning("job %s failed: %s", job.job_id, error)
        else:
            log.info("job %s %s in %.0f ms", job.job_id, state.value.lower(), job.timings.total_ms)

    # --- recovery -------------------------------------------------------------------
    def _recover(self) -> None:
        assert self.journal is not None
        retention = time.time() - self.config.daemon.job_retention
        self.journal.prune(retention, keep=self.config.daemon.max_retained_jobs)
        resumed = failed = 0
        records = self.journal.records()
        # finished ones in the order they ended (the registry keeps that order)
        records.sort(key=lambda r: r.finished_at or 0.0 if r.state.terminal else 0.0)
        for rec in records:
            job = Job(
                job_id=rec.job_id,
                request=rec.request,
                priority=rec.priority,
                submitted_at=rec.submitted_at,
                submitted_mono=None,
                digest=rec.digest,
                state=rec.state,
                finished_at=rec.finished_at,
                error=rec.error,
                proof=rec.proof,
                timings=rec.timings,
                client=rec.client,
            )
            if rec.state.terminal:
                job.done.set()
                self.registry.add(job)
                continue
            self.registry.add(job)
            self.admission.resume(job.job_id, job.kind.label, request_bytes(rec.request))
            try:
                handler, parsed = self.kinds.parse(rec.request)
            except CuzkError as e:
                with self.registry.lock:
                    self._finish(job, JobState.FAILED, f"could not be resumed after a restart: {e}")
                failed += 1
                continue
            job.parsed = parsed
            job.circuit_id = parsed.circuit_id
            job.num_partitions = len(parsed.partitions)
            self.batcher.add(job, handler.batchable)
            resumed += 1
        if resumed or failed:
            log.warning(
                "journal: %d unfinished job(s) resumed, %d failed on resume", resumed, failed
            )

    def _housekeep(self) -> None:
        while not self._stopped.wait(60.0):
            cutoff = time.time() - self.config.daemon.job_retention
            gone = self.registry.prune(cutoff)
            keep = self.config.daemon.max_retained_jobs
            if self.journal is not None and self.journal.prune(cutoff, keep=keep):
                self.journal.compact()
            if gone:
                log.info("forgot %d finished jobs older than job_retention", len(gone))

    # --- SRS ---------------------------------------------------------------------------
    def time_critical_circuit(self, circuit_id: str, at_least: Priority = Priority.HIGH) -> bool:
        """Whether ``circuit_id`` is a time-critical kind's (WinningPoSt, WindowPoSt;
        with ``at_least`` CRITICAL, WinningPoSt's only); False for a circuit no
        kind serves."""
        try:
            kind = self.kinds.for_circuit(circuit_id).kind
        except CuzkError:
            return False
        return Priority.default_for(kind) >= at_least

    def start_order(self, circuits: tuple[str, ...] | list[str]) -> list[str]:
        """``[srs] load_at_start`` in the order the daemon loads it: the
        time-critical kinds' keys first (small, and needed within seconds), then
        the others as listed; each once."""
        unique = list(dict.fromkeys(circuits))
        return sorted(unique, key=lambda c: not self.time_critical_circuit(c))

    def _load_at_start(self, order: list[str]) -> None:
        """Load ``order``'s keys one after the other while the daemon serves: a
        WinningPoSt proves as soon as its key is in, whatever loads after it. A
        key that cannot load is logged and named in /status; the daemon goes on."""
        for cid in order:
            if self._stopped.is_set():
                return
            self.start_loads[cid] = "loading"
            t = time.monotonic()
            try:
                self.preload(cid)
            except Exception as e:  # the daemon keeps serving; the log and /status say why
                self.start_loads[cid] = f"failed: {e}"
                log.error("[srs] load_at_start: %s could not be loaded: %s", cid, e)
                continue
            dt = time.monotonic() - t
            self.start_loads[cid] = f"loaded ({dt:.1f} s)"
            log.info("[srs] load_at_start: %s loaded in %.1f s", cid, dt)

    def _keep_for(self, circuit_id: str) -> None:
        """Each GPU keeps a CRITICAL circuit's partition working set for it
        (``[gpus] time_critical_vram = "auto"``) from the moment its key is in."""
        e = self.keys.entry(circuit_id)
        for d in self.devices:
            if d.budget is not None and d.ordinal in e.prepared:
                res = self.keys.residency(e, d)
                self.pipeline.keep_for_time_critical(d, res.partition_device_bytes)

    def preload(self, circuit_id: str) -> tuple[bool, float]:
        """PreloadSRS: the key made HOT on every healthy device (a WinningPoSt's
        also sizes the VRAM kept for time-critical proofs there)."""
        healthy = [d.ordinal for d in self.devices if self.pipeline.health.healthy(d.ordinal)]
        got = self.keys.preload(circuit_id, healthy)
        # and its witness plan, here and in the synthesis processes (a warm
        # daemon's first job goes straight to its checks and its proofs)
        self.pipeline.warm_plan(self.kinds.for_circuit(circuit_id), circuit_id, processes=True)
        if self.time_critical_circuit(circuit_id, Priority.CRITICAL):
            self._keep_for(circuit_id)
        return got

    def evict(self, circuit_id: str) -> tuple[bool, int]:
        return self.keys.evict(circuit_id)

    # --- status ----------------------------------------------------------------------------
    def status(self) -> EngineStatus:
        now, mono = time.time(), time.monotonic()
        with self.registry.lock:  # queues and totals from one moment; O(live jobs)
            jobs = self.registry.live() + self.registry.recently_finished(now - PIPELINE_LINGER_S)
            states = [(j, j.state) for j in jobs]
            totals = dict(self.totals)
        by_kind: dict[str, list[int]] = {}
        for j, state in states:
            if state.terminal:
                continue
            slot = by_kind.setdefault(j.kind.label, [0, 0])
            slot[0 if state == JobState.QUEUED else 1] += 1
        queues = tuple(QueueStatus(k, p, r) for k, (p, r) in sorted(by_kind.items()))
        keys = tuple(self.keys.status())
        health = self.pipeline.health.snapshot()
        work = self.pipeline.device_work()
        clock = self.pipeline.health.clock()
        devices = []
        for d in self.devices:
            ws = [w for w in self.pipeline.workers if w.device is d]
            current = tuple((w.job_id, w.kind) for w in ws if w.job_id)
            budget = d.budget if d.budget is not None else self.host_budget
            h = health[d.ordinal]
            devices.append(
                DeviceStatus(
                    d.ordinal,
                    d.name,
                    d.backend.name,
                    d.total_bytes,
                    budget.limit,
                    budget.free,
                    current,
                    healthy=h.healthy,
                    failures=h.failures,
                    failed_over=h.failed_over,
                    last_failure=h.last_failure,
                    unhealthy_s=None if h.unhealthy_since is None else clock - h.unhealthy_since,
                    next_probe_s=None if h.next_probe is None else max(0.0, h.next_probe - clock),
                    partitions_proven=work[d.ordinal].proven,
                    busy_s=work[d.ordinal].busy_seconds,
                    workers=len(ws),
                    memory_free=d.free_bytes(),
                    partitions_held=sum(w.held for w in ws),
                    resident_keys=tuple(
                        (e.circuit_id, e.device_bytes.get(d.ordinal, 0))
                        for e in keys
                        if d.ordinal in e.devices
                    ),
                    budget_reserved=budget.reserved,
                    budget_peak=budget.peak,
                )
            )
        budgets = {"host": self.host_budget.snapshot()}
        for d in self.devices:
            if d.budget is not None:
                budgets[f"vram:{d.ordinal}"] = d.budget.snapshot()
        depths = {"batch": len(self.batcher.pending_jobs()), **self.pipeline.stage_depths()}
        workers = tuple(
            {"name": w.name, "job_id": w.job_id, "proof_kind": w.kind}
            for w in self.pipeline.workers
        )
        # Curio's counts are of the configured workers; the time-critical lane's
        # (one synthesis worker, one GPU worker a device) are in ``workers``
        gpu_workers = [w for w in self.pipeline.workers if w.device is not None and not w.urgent]
        synth = [w for w in self.pipeline.synthesis_workers() if not w.urgent]
        completed_by_kind, failed_by_kind = self.metrics.by_kind()
        return EngineStatus(
            uptime_s=now - self._started_at,
            devices=tuple(devices),
            keys=keys,
            queues=queues,
            completed=totals[JobState.COMPLETED],
            failed=totals[JobState.FAILED],
            cancelled=totals[JobState.CANCELLED],
            budgets=budgets,
            stage_depths=depths,
            gpu_workers=len(gpu_workers),
            kinds=tuple(k.label for k in self.kinds.kinds()),
            draining=self._draining,
            host_limit=self.host_budget.limit,
            host_reserved=self.host_budget.reserved,
            workers=workers,
            queue_depth=sum(q.pending for q in queues),
            completed_by_kind=completed_by_kind,
            failed_by_kind=failed_by_kind,
            pipelines=tuple(
                pipeline_entry(j, now, mono) for j, _ in states if shown_in_status(j, now)
            ),
            gpu_worker_states=tuple(
                {
                    "worker_id": i,
                    "gpu_ordinal": w.device.ordinal if w.device is not None else 0,
                    "state": "proving" if w.job_id else "idle",
                    "current_job": w.job_id or None,
                    "current_partition": w.partition if w.job_id and w.partition >= 0 else None,
                    "busy_secs": round(now - w.busy_since, 3) if w.job_id else None,
                }
                for i, w in enumerate(gpu_workers)
            ),
            synthesis_workers=len(synth),
            synthesis_active=sum(1 for w in synth if w.job_id),
            admission=self.admission.snapshot(),
            loading=tuple(under_way()),
            load_at_start=dict(self.start_loads),
        )

    def metrics_text(self) -> str:
        return self.metrics.text()
