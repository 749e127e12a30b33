"""``cuzk-bench kernels``: argument parsing and the table (no GPU needed)."""

from __future__ import annotations

import argparse

from cuzk.bench import kernels as bench_kernels


def test_registers_kernels_subcommand():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    bench_kernels.register(sub)
    args = parser.parse_args(["kernels", "--quick", "--json", "out.json", "--sections", "ntt"])
    assert args.quick and args.json == "out.json" and args.sections == "ntt"
    assert args.func is bench_kernels.run


def test_table_lists_rows_and_errors():
    rows = [
        {
            "op": "ntt",
            "size": 1 << 24,
            "median_ms": 4.2,
            "rate": 40.0,
            "unit": "Gmul/s",
            "floor_ms": 3.0,
            "ratio_to_floor": 1.4,
            "tables": "full",
            "check": True,
        },
        {"op": "spmv", "error": "RuntimeError: boom"},
    ]
    text = bench_kernels.table(rows)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["op", "size", "median_ms"]
    assert "16777216" in lines[2] and "tables=full,check=True" in lines[2]
    assert "ERROR RuntimeError: boom" in lines[3]


def test_standalone_entry_parses_options(monkeypatch):
    seen = {}
    monkeypatch.setattr(bench_kernels, "run", lambda args: seen.setdefault("args", args) and 0)
    bench_kernels.main(["--quick", "--sections", "spmv"])
    assert seen["args"].quick and seen["args"].sections == "spmv"
