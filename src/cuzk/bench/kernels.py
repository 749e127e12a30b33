"""``cuzk-bench kernels``: GPU kernel timings against the device's measured ceilings;
``cuzk-bench gpu-proof``: one timed proof (:mod:`cuzk.bench.gpu_proof`).

Measures the two ceilings first (device-to-device copy bandwidth, Fr
Montgomery multiply rate), then collects the rows of each kernel family's
benchmark module (``rows(ctx, ceilings, quick)``): Fr / NTT / H / sparse
(:mod:`cuzk.bench.fr_ntt`) and MSM (:mod:`cuzk.bench.msm`). Prints a table;
``--json`` writes everything. ``python -m cuzk.bench.kernels [options]`` runs
the subcommand alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import platform
import sys


def register(subparsers) -> None:
    g = subparsers.add_parser(
        "gpu-proof", help="a demo-circuit Groth16 proof on the CUDA backend: timed, verified"
    )
    g.add_argument("--log-constraints", type=int, default=20, help="log2 of the circuit's size")
    g.add_argument("--json", default=None, help="write the result here")
    g.set_defaults(func=run_gpu_proof)
    p = subparsers.add_parser("kernels", help="GPU kernel timings against measured ceilings")
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test)")
    p.add_argument("--json", metavar="PATH", help="write ceilings and rows as JSON")
    p.add_argument("--device", type=int, default=0, help="CUDA device id")
    p.add_argument(
        "--sections",
        default="",
        help="comma-separated sections of the Fr/NTT family (fr, ntt, h_poly, spmv); default all",
    )
    p.set_defaults(func=run)


def _fmt(v, width: int) -> str:
    if v is None:
        return "-".rjust(width)
    if isinstance(v, float):
        return f"{v:.4g}".rjust(width)
    return str(v).rjust(width)


def table(rows: list[dict]) -> str:
    cols = [
        ("op", 20),
        ("size", 11),
        ("median_ms", 11),
        ("rate", 9),
        ("unit", 7),
        ("floor_ms", 10),
        ("ratio_to_floor", 8),
        ("note", 24),
    ]
    head = " ".join(name[:w].rjust(w) if i else name.ljust(w) for i, (name, w) in enumerate(cols))
    lines = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['op']:<20} ERROR {r['error']}")
            continue
        note = ",".join(
            f"{k}={r[k]}"
            for k in ("tables", "variant", "build", "check", "nnz")
            if r.get(k) is not None
        )
        vals = [
            r.get("op"),
            r.get("size"),
            r.get("median_ms"),
            r.get("rate"),
            r.get("unit"),
            r.get("floor_ms"),
            r.get("ratio_to_floor"),
            note,
        ]
        lines.append(
            " ".join(
                (str(v).ljust(w) if i == 0 else _fmt(v, w))
                for i, (v, (_, w)) in enumerate(zip(vals, cols, strict=True))
            )
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from cuzk.backends.cuda import cuda_available

    if not cuda_available():
        sys.stderr.write("cuzk-bench kernels: no CUDA device with CuPy is available here\n")
        return 2
    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.bench import fr_ntt, msm

    ctx = DeviceContext(args.device)
    ceilings = fr_ntt.measure_ceilings(ctx, args.quick)
    sections = [s for s in args.sections.split(",") if s]
    rows: list[dict] = fr_ntt.rows(ctx, ceilings, args.quick, sections or None)
    if not sections:  # the sections name the Fr / NTT family's; MSM rows only in a full run
        rows.extend(msm.rows(ctx, ceilings, args.quick))
    copy = ceilings["copy_bytes_per_s"] / 1e9
    mul = ceilings["fr_mul_per_s"] / 1e9
    sys.stdout.write(
        f"device {ceilings.get('device', '?')}: copy {copy:.0f} GB/s (read + write), "
        f"Fr mul {mul:.1f} G/s\n"
    )
    sys.stdout.write(table(rows) + "\n")
    if args.json:
        doc = {
            "command": "cuzk-bench kernels" + (" --quick" if args.quick else ""),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(),
            "ceilings": ceilings,
            "rows": rows,
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 1 if any("error" in r or r.get("check") is False for r in rows) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m cuzk.bench.kernels [options]``: the subcommand alone, so
    it runs where other ``cuzk-bench`` subcommands' dependencies are missing."""
    parser = argparse.ArgumentParser(prog="cuzk-bench")
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["kernels", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return run(args)


def run_gpu_proof(args: argparse.Namespace) -> int:
    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.bench.gpu_proof import gpu_proof_rows

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    rows, info = gpu_proof_rows(DeviceContext(), args.log_constraints)
    print(json.dumps({"rows": rows, "proof": info}, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "proof": info}, f, indent=1)
    return 0 if info.get("verified") else 1


if __name__ == "__main__":
    sys.exit(main())
