"""Device health and failover: a device that fails mid-batch gives its partitions
to the other, is taken out of service, and comes back when a probe passes."""

from __future__ import annotations

import threading

import pytest
from gpu_stand_ins import circuit_bytes, engine_config, stand_in_gpus, wait_for
from prometheus_client.parser import text_string_to_metric_families

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.engine import Engine
from cuzk.engine.health import DeviceHealth, is_device_failure
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.errors import DeviceError, InputError, ResourceError
from cuzk.service.convert import status_to_pb

C = DemoCircuit(rounds=20, words=1)
CID = demo.circuit_id(C.rounds, C.words)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_failed_device_is_probed_after_the_interval_and_recovers() -> None:
    clock, changes = Clock(), []
    h = DeviceHealth([0, 1], 60.0, clock, on_change=lambda: changes.append(1))
    assert h.healthy(0) and h.seconds_to_probe(0) is None
    assert h.failed(1, "boom") is True
    assert h.failed(1, "again") is False  # out of service already: the probe time stands
    r = h.record(1)
    assert (r.healthy, r.failures, r.last_failure, r.unhealthy_since) == (False, 2, "again", 100.0)
    assert h.healthy(0) and h.seconds_to_probe(1) == 60.0
    assert not h.claim_probe(1)  # not due
    clock.now = 160.0
    assert h.claim_probe(1) and not h.claim_probe(1)  # one prober at a time
    h.probe_failed(1, "still broken")
    r = h.record(1)
    assert (r.healthy, r.probes_failed, r.last_failure) == (False, 1, "probe: still broken")
    assert h.seconds_to_probe(1) == 60.0  # the next probe, an interval later
    clock.now = 220.0
    assert h.claim_probe(1)
    h.probe_passed(1)
    assert h.healthy(1) and h.seconds_to_probe(1) is None and h.record(1).failures == 2
    assert len(changes) == 2  # taken out, put back


def test_what_counts_as_a_device_failure() -> None:
    def cupy_error(name: str, module: str) -> Exception:
        return type(name, (RuntimeError,), {"__module__": module})("cudaErrorIllegalAddress")

    assert is_device_failure(DeviceError(1, "lost"))
    assert is_device_failure(cupy_error("CUDARuntimeError", "cupy_backends.cuda.api.runtime"))
    assert is_device_failure(cupy_error("OutOfMemoryError", "cupy.cuda.memory"))
    wrapped = RuntimeError("load failed")
    wrapped.__cause__ = cupy_error("CUDADriverError", "cupy_backends.cuda.api.driver")
    assert is_device_failure(wrapped)
    # the work's faults fail the job, as on one device
    assert not is_device_failure(ResourceError("vram:0: more than the whole budget"))
    assert not is_device_failure(InputError("k.params", "h", "point 3 off its curve"))
    assert not is_device_failure(cupy_error("CompileException", "cupy.cuda.compiler"))


def _run_with_a_failing_gpu(tmp_path, monkeypatch, spec: str, probe: str, jobs: int, parts: int):
    """Two stand-in GPUs, GPU 1 made to fail by CUZK_FAIL_DEVICE=``spec``. GPU 0
    holds its proofs until GPU 1 has failed, so that GPU 1 takes partitions and
    fails with work in flight on both."""
    monkeypatch.setenv("CUZK_FAIL_DEVICE", spec)
    key, part = circuit_bytes(CID)
    devices, gpus = stand_in_gpus(2, key + 2 * part)
    gpus[0].gate.clear()
    e = Engine(engine_config(tmp_path, recovery_probe_interval=probe), devices=devices)
    e.start()
    opener = threading.Thread(
        target=lambda: (
            wait_for(lambda: not e.pipeline.health.healthy(1), "GPU 1 fails"),
            gpus[0].gate.set(),
        ),
        daemon=True,
    )
    opener.start()
    ids = [
        e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, parts))).job_id
        for _ in range(jobs)
    ]
    finished = [e.await_job(i, 120)[0] for i in ids]
    opener.join(5)
    return e, gpus, finished


def test_a_gpu_lost_mid_batch_hands_its_partitions_to_the_other(tmp_path, monkeypatch) -> None:
    e, gpus, jobs = _run_with_a_failing_gpu(tmp_path, monkeypatch, "1:2", "60s", 3, 4)
    try:
        assert [j.state for j in jobs] == [JobState.COMPLETED] * 3, [j.error for j in jobs]
        st = e.status()
        gpu0, gpu1 = st.devices
        # GPU 1 proved the two partitions before its failure and nothing after
        assert gpu1.partitions_proven == 2 and gpu0.partitions_proven == 10
        assert sum(g.proofs for g in gpus) == 12  # every partition proven exactly once
        assert 'cuzk_partitions_proven_total{proof_kind="demo"} 12.0' in e.metrics_text()
        assert not gpu1.healthy and gpu0.healthy
        assert gpu1.failures >= 1 and gpu1.failed_over >= 1 and gpu0.failures == 0
        assert "injected failure (CUZK_FAIL_DEVICE)" in gpu1.last_failure
        assert gpu1.next_probe_s is not None and gpu1.next_probe_s > 0
        # what GPU 1 held is dropped once nothing runs there
        wait_for(lambda: gpus[1].vram.reserved_bytes == 0, "GPU 1's keys dropped")
        assert [s.devices for s in e.status().keys if s.circuit_id == CID] == [(0,)]
        assert all(g.vram.overdrawn_by_operation == {} for g in gpus)
        # status, GetStatus and the metrics say so
        js = e.status().to_json()["devices"]
        assert [d["health"] for d in js] == ["healthy", "unhealthy"]
        assert js[1]["partitions_proven"] == 2 and js[1]["resident_keys"] == []
        names = [g.name for g in status_to_pb(e.status()).gpus]
        assert names[0] == "stand-in GPU 0" and names[1].startswith("stand-in GPU 1 (unhealthy: ")
        samples = {
            (s.name, s.labels.get("device")): s.value
            for f in text_string_to_metric_families(e.metrics_text())
            for s in f.samples
            if s.name.startswith("cuzk_device_")
        }
        assert samples[("cuzk_device_healthy", "0")] == 1
        assert samples[("cuzk_device_healthy", "1")] == 0
        assert samples[("cuzk_device_failures_total", "1")] == gpu1.failures
        assert samples[("cuzk_device_partitions_proven_total", "1")] == 2
        assert samples[("cuzk_device_partitions_proven_total", "0")] == 10
        assert samples[("cuzk_device_partitions_failed_over_total", "1")] == gpu1.failed_over
        # the lost GPU gets no new work: the next job is proven on GPU 0 alone
        more = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 3)))
        job, _ = e.await_job(more.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        assert [d.partitions_proven for d in e.status().devices] == [13, 2]
    finally:
        e.stop()


def test_a_gpu_that_failed_once_passes_its_probe_and_proves_again(tmp_path, monkeypatch):
    e, gpus, jobs = _run_with_a_failing_gpu(tmp_path, monkeypatch, "1:0:once", "50ms", 2, 4)
    try:
        assert [j.state for j in jobs] == [JobState.COMPLETED] * 2, [j.error for j in jobs]
        assert sum(g.proofs for g in gpus) == 8
        wait_for(lambda: e.pipeline.health.healthy(1), "GPU 1 passes its probe")
        gpu1 = e.status().devices[1]
        assert gpu1.healthy and gpu1.failures == 1 and gpu1.next_probe_s is None
        assert e.pipeline.health.record(1).probes_failed == 0
        # it takes work again: with GPU 0 held, a job's backlog goes to GPU 1
        before, made = gpu1.partitions_proven, gpus[1].proofs
        gpus[0].gate.clear()
        more = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 6)))
        wait_for(lambda: gpus[1].proofs > made, "GPU 1 proves again")
        gpus[0].gate.set()
        job, _ = e.await_job(more.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        assert e.status().devices[1].partitions_proven > before
        assert sum(g.proofs for g in gpus) == 14
    finally:
        e.stop()


def test_a_partition_that_fails_on_every_device_fails_its_job(tmp_path, monkeypatch) -> None:
    """One device: nowhere to fail over to; the job fails naming the device, and
    the device is out of service until its probe passes."""
    monkeypatch.setenv("CUZK_FAIL_DEVICE", "0:0:once")
    key, part = circuit_bytes(CID)
    devices, gpus = stand_in_gpus(1, key + 2 * part)
    e = Engine(engine_config(tmp_path, recovery_probe_interval="50ms"), devices=devices)
    e.start()
    try:
        r = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 1)))
        job, _ = e.await_job(r.job_id, 120)
        assert job.state == JobState.FAILED
        assert "proving failed on every device" in job.error and "GPU 0" in job.error
        wait_for(lambda: e.pipeline.health.healthy(0), "GPU 0 passes its probe")
        r = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 1)))
        job, _ = e.await_job(r.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        assert gpus[0].proofs == 1
    finally:
        e.stop()


def test_with_every_device_lost_waiting_partitions_fail_at_the_failed_probe(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("CUZK_FAIL_DEVICE", "0:0")
    key, part = circuit_bytes(CID)
    devices, gpus = stand_in_gpus(1, key + 2 * part)
    e = Engine(engine_config(tmp_path, recovery_probe_interval="100ms"), devices=devices)
    e.start()
    try:
        first = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 1)))
        job, _ = e.await_job(first.job_id, 120)
        assert job.state == JobState.FAILED and "failed on every device" in job.error
        later = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 2)))
        job, _ = e.await_job(later.job_id, 120)
        assert job.state == JobState.FAILED
        assert "every device is out of service (GPU 0: probe: GPU 0: injected" in job.error
        assert gpus[0].proofs == 0 and not e.pipeline.health.healthy(0)
        assert e.pipeline.health.record(0).probes_failed >= 1
    finally:
        e.stop()


class TwoFaults:
    """GPU 1 lost for good; GPU 0 fails one proof and recovers."""

    def __init__(self) -> None:
        self.gpu0_failed = False

    def before_proof(self, ordinal: int) -> None:
        if ordinal == 1:
            raise DeviceError(1, "lost")
        if not self.gpu0_failed:
            self.gpu0_failed = True
            raise DeviceError(0, "transient")

    def before_probe(self, ordinal: int) -> None:
        if ordinal == 1:
            raise DeviceError(1, "lost")


def test_a_partition_no_device_in_service_may_prove_fails_instead_of_waiting(tmp_path) -> None:
    """GPU 1 is out of service for good; the partition fails on GPU 0, which
    recovers: no device in service may prove it, so its job fails (at GPU 1's next
    failed probe) instead of waiting for GPU 1 forever."""
    key, part = circuit_bytes(CID)
    devices, gpus = stand_in_gpus(2, key + 2 * part)
    e = Engine(engine_config(tmp_path, recovery_probe_interval="100ms"), devices=devices)
    e.pipeline.faults = TwoFaults()
    e.start()
    try:
        e.pipeline.health.failed(1, "GPU 1: lost")
        r = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 1)))
        job, _ = e.await_job(r.job_id, 120)
        assert job.state == JobState.FAILED
        assert "GPU 0: transient" in job.error or "every device is out of service" in job.error
        assert "GPU 1: " in job.error, job.error
        wait_for(lambda: e.pipeline.health.healthy(0), "GPU 0 passes its probe")
        r = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 2)))
        job, _ = e.await_job(r.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        assert [g.proofs for g in gpus] == [2, 0]
    finally:
        e.stop()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("1", "takes ORDINAL:AFTER[:MODE]"),
        ("1:x", "takes ORDINAL:AFTER[:MODE]"),
        ("1:2:sometimes", "takes ORDINAL:AFTER[:MODE]"),
        ("7:2", "no device 7 to fail (the devices are 0, 1)"),
    ],
)
def test_a_bad_failure_injection_is_refused_naming_the_variable(
    tmp_path, monkeypatch, value, problem
) -> None:
    monkeypatch.setenv("CUZK_FAIL_DEVICE", value)
    devices, _ = stand_in_gpus(2, 1 << 30)
    with pytest.raises(InputError, match="CUZK_FAIL_DEVICE") as err:
        Engine(engine_config(tmp_path), devices=devices)
    assert problem in str(err.value)
