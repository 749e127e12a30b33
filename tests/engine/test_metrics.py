"""Metrics: Curio's names and label values beside ours, in one exposition."""

from __future__ import annotations

from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from cuzk.engine.metrics import EngineMetrics, curio_metric_label, curio_status_name


def snapshot(**kw) -> SimpleNamespace:
    base = dict(
        uptime_s=42.0,
        stage_depths={"batch": 1, "synthesis": 2, "gpu": 0, "epilogue": 0},
        queue_depth=3,
        completed=2,
        failed=1,
        queues=[],
        gpu_workers=2,
        budgets={},
        keys=[],
    )
    return SimpleNamespace(**{**base, **kw})


def test_curios_metric_names_and_labels_are_served() -> None:
    m = EngineMetrics(snapshot)
    m.job_finished("porep", "completed", 12.5)
    m.job_finished("porep", "completed", 7.5)
    m.job_finished("wpost", "failed", 1.0)
    m.job_finished("snap", "cancelled", 1.0)  # neither completed nor failed, for Curio
    lines = m.text().splitlines()
    # The Rust daemon's series, exactly as its dashboards query them.
    for line in (
        "cuzk_proofs_completed_total 2.0",
        "cuzk_proofs_failed_total 1.0",
        "cuzk_queue_depth 3.0",
        "cuzk_uptime_seconds 42.0",
        "cuzk_gpu_workers 2.0",
        "cuzk_running_jobs 0.0",
        "# TYPE cuzk_proofs_completed counter",
        'cuzk_proofs_completed{proof_kind="porep_c2"} 2',
        "# TYPE cuzk_proofs_failed counter",
        'cuzk_proofs_failed{proof_kind="window_post"} 1',
        'cuzk_proof_duration_seconds_count{proof_kind="porep_c2"} 2.0',
        'cuzk_proof_duration_seconds_sum{proof_kind="porep_c2"} 20.0',
    ):
        assert line in lines, line
    # Ours beside them: per-stage depths moved to their own name, the full tally stays.
    assert 'cuzk_stage_queue_depth{stage="synthesis"} 2.0' in lines
    assert 'cuzk_proofs_total{proof_kind="snap",status="cancelled"} 1.0' in lines
    # Curio's unlabelled names carry no labelled series of ours (dashboards sum them).
    for name in ("cuzk_proofs_completed_total", "cuzk_proofs_failed_total", "cuzk_queue_depth"):
        assert [x for x in lines if x.startswith(name + "{")] == [], name
    # One TYPE line per name: the exposition is well formed.
    types = [x.split()[2] for x in lines if x.startswith("# TYPE ")]
    assert len(types) == len(set(types))
    names = {f.name for f in text_string_to_metric_families(m.text())}
    assert {"cuzk_proofs_completed", "cuzk_queue_depth", "cuzk_proof_duration_seconds"} <= names


def test_curio_names_of_the_proof_kinds() -> None:
    assert [curio_metric_label(k) for k in ("porep", "snap", "wpost", "winning", "demo")] == [
        "porep_c2",
        "snap_update",
        "window_post",
        "winning_post",
        "demo",
    ]
    assert [curio_status_name(k) for k in ("porep", "snap", "wpost", "winning")] == [
        "porep-c2",
        "snap-update",
        "window-post",
        "winning-post",
    ]


def test_every_device_has_its_health_work_and_keys() -> None:
    from cuzk.engine.status import DeviceStatus

    devices = [
        DeviceStatus(0, "H200", "cuda", 141, 127, 27, (("j1", "porep"),), partitions_proven=7,
                     busy_s=12.5, workers=2, partitions_held=1,
                     resident_keys=(("porep-32g", 60_000),)),
        DeviceStatus(1, "H200", "cuda", 141, 127, 127, (), healthy=False, failures=2,
                     failed_over=3, last_failure="GPU 1: lost"),
    ]  # fmt: skip
    m = EngineMetrics(lambda: snapshot(devices=devices))
    lines = m.text().splitlines()
    for line in (
        'cuzk_device_healthy{device="0"} 1.0',
        'cuzk_device_healthy{device="1"} 0.0',
        'cuzk_device_failures_total{device="1"} 2.0',
        'cuzk_device_partitions_failed_over_total{device="1"} 3.0',
        'cuzk_device_partitions_proven_total{device="0"} 7.0',
        'cuzk_device_busy_seconds_total{device="0"} 12.5',
        'cuzk_device_partitions_held{device="0"} 1.0',
        'cuzk_device_key_bytes{circuit_id="porep-32g",device="0"} 60000.0',
    ):
        assert line in lines, line
    assert not [
        x for x in lines if x.startswith('cuzk_device_key_bytes{circuit_id="porep-32g",device="1"')
    ]
    types = [x.split()[2] for x in lines if x.startswith("# TYPE ")]
    assert len(types) == len(set(types))
