"""The MSM benchmark end to end on the CPU twin at tiny sizes (a numpy stand-in for
CuPy): the old-vs-new rows, the variants of --explore and the checks against
the CPU backend all run and agree, so a device call does not find a slip in
the benchmark's own code."""

from __future__ import annotations

import importlib.util

import pytest
import twin_cupy

from cuzk.bench import msm as bench_msm
from cuzk.bench import timing


@pytest.fixture
def twin_ctx(monkeypatch, host_kernels):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("the real CuPy is installed: the GPU run covers the benchmark")
    twin_cupy.install(monkeypatch)
    for name, value in {
        "MSM_LOGS": {"G1": [8, 10], "G2": [6]},
        "COMPARE": {"G1": (10,), "G2": (6,)},
        "ZERO_ONE_LOG": 11,
        "STREAMED_LOG": 9,
        "FIXED_BASE_LOGS": (5, 5),
        "CHECK_CASES": (("G1", 300), ("G2", 40)),
        "CHECK_SPLIT_LOG": 10,
    }.items():
        monkeypatch.setattr(bench_msm, name, value)
    # One run per timing: the twin's times mean nothing, its results do.
    monkeypatch.setattr(timing, "time_ms", lambda fn, warmup=1, reps=5: [(fn(), 1.0)[1]])
    return twin_cupy.TwinContext(host_kernels)


@pytest.mark.slow
def test_rows_compare_versions(twin_ctx):
    rows = bench_msm.msm_rows(twin_ctx, {}, quick=False)
    keys = {(r["op"], r["size"], r.get("variant")) for r in rows}
    for op, size in (("msm_g1", 1 << 10), ("msm_g2", 1 << 6), ("msm_g1_zero_one", 1 << 11)):
        assert {(op, size, "v1"), (op, size, "v2")} <= keys
    compared = [r for r in rows if "check" in r]
    assert compared and all(r["check"] for r in compared)
    assert all(r["phases"] for r in compared)
    assert any(r["op"] == "msm_g1_streamed" for r in rows)
    assert "v1" in bench_msm._table(rows) and "DIFFERENT" not in bench_msm._table(rows)


@pytest.mark.slow
def test_explore_and_checks(twin_ctx):
    from cuzk.backends.cuda.msm import MsmEngine

    rows, phases = bench_msm.explore_rows(twin_ctx, logs=(8, 7, 9, 4))
    assert len(rows) == len(phases) == 8
    assert all(r["check"] for r in rows)
    g1 = {r["variant"] for r in rows if r["op"] == "msm_g1"}
    g2 = {r["variant"] for r in rows if r["op"] == "msm_g2"}
    assert g1 == g2 == {"v2", "index"}
    assert bench_msm.check_against_cpu(MsmEngine(twin_ctx), seed=3) == []
    assert bench_msm.fixed_base_rows(twin_ctx, {}, quick=True)


def test_profile_one_runs_the_msm_it_profiles(twin_ctx, monkeypatch, capsys):
    """`cuzk.bench.msm --profile LOG` (what scripts/device-ncu-msm.sh runs under ncu)."""
    import json

    from cuzk.backends.cuda import memory

    monkeypatch.setattr(memory, "DeviceContext", lambda: twin_ctx)
    assert bench_msm.main(["--profile", "9"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["log"] == 9 and out["phases_ms"]


class _Sppark:
    """A stand-in for the comparison library: our CPU backend's answer (or a wrong
    one, or an error), so the benchmark's side-by-side row is tested here."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def msm(self, group, points, scalars, reps):
        from cuzk.algebra.curves import G1, G2

        if self.mode == "error":
            raise RuntimeError("no device")
        g = G1 if group == "G1" else G2
        return [2.0] * reps, g.generator if self.mode == "wrong" else self.want


@pytest.mark.parametrize("mode", ["same", "wrong", "error"])
def test_sppark_row_checks_the_point(twin_ctx, mode):
    from cuzk.backends.cuda.msm import MsmEngine
    from cuzk.bench.inputs import make_bases, random_scalars_device

    eng = MsmEngine(twin_ctx)
    handle = eng.prepare_g1(make_bases(eng, "G1", 64, seed=1))
    scalars = random_scalars_device(64, seed=2)
    sp = _Sppark(mode)
    sp.want = eng.msm_g1(handle, scalars)
    row = bench_msm._sppark_row(sp, eng, "G1", handle, scalars, lambda ms: {"median_ms": ms})
    assert row["variant"] == "sppark"
    assert row["check"] is (mode == "same")
    assert row["median_ms"] == (0.0 if mode == "error" else 2.0)
    assert ("error" in row) is (mode == "error")
