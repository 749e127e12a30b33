"""cuzk.bench.hardening at a small scale: each scenario runs and reports what issue 32's
acceptance asks of it (the full-size figures come from running it by hand)."""

from __future__ import annotations

from cuzk.bench import hardening


def test_scenarios_at_a_small_scale(monkeypatch) -> None:
    monkeypatch.setattr(hardening, "SETTLE_S", 0.2)
    j = hardening.run_json(0.01)
    assert j["answer"] == "INVALID_ARGUMENT" and j["answer_s"] < 5
    r = hardening.run_retained(0.01, threads=4)
    assert r["retained"] == 120 and r["cancel_max_ms"] < 2000
    assert r["gc_gen2"]["passes"] >= 0 and r["gc_tracked_objects"] > 0
    assert r["flood_getstatus_per_s"] > 0  # the cancels were timed under the flood
    assert r["cancelled_jobs_proving"] is False
    c = hardening.run_connections(0.003, handshake_wait=False)
    assert c["connections_opened"] == 63 and c["new_client_after"] == "OK"
    assert c["new_client_during_waiting_for_ready"] == "OK"
    assert c["prove_during_waiting_for_ready"] == "OK"
    assert c["log_lines_per_min"] < 100
    b = hardening.run_bodies(0.0005, rounds=1, concurrent=3)  # clients in a process of their own
    assert b["rounds"][0]["answers"] == {"INVALID_ARGUMENT": 3}
