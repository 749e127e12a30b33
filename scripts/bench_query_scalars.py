"""Groth16 setup's query scalars: the Python-int reference against the native kernels.

    .venv/bin/python scripts/bench_query_scalars.py [--demo 16 20] [--porep 2KiB] [--skip-python]

For each circuit, each path runs in its own forked process (so one's
garbage does not weigh on the other's peak) and reports its wall time and
peak resident memory above the R1CS it starts from (VmHWM after resetting it
through /proc/self/clear_refs); the two results are compared bit for bit by
hashing every query array. A table is printed last.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import time

from cuzk.backends import native
from cuzk.groth16 import setup


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _run(r1cs, path: str, conn) -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    base = _rss_kib("VmRSS")
    fn = setup.query_scalars_python if path == "python" else setup.query_scalars
    t = time.perf_counter()
    q = fn(r1cs, setup.ToxicWaste.draw(seed=5))
    dt = time.perf_counter() - t
    peak = _rss_kib("VmHWM") - base
    digest = hashlib.sha256()
    for name in ("ic", "l", "h", "a", "b"):
        digest.update(getattr(q, name).tobytes())
    conn.send((dt, peak / 1024, digest.hexdigest()))


def _measure(r1cs, path: str) -> tuple[float, float, str]:
    ctx = mp.get_context("fork")
    rx, tx = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_run, args=(r1cs, path, tx))
    p.start()
    out = rx.recv()
    p.join()
    return out


def _demo(log_n: int):
    from cuzk.circuits.demo import DemoCircuit
    from cuzk.r1cs import ConstraintSystem

    cs = ConstraintSystem(witness=False)
    DemoCircuit.with_constraints(1 << log_n).synthesize(cs, None, None)
    return cs.r1cs()


def _porep(size: str):
    from cuzk.circuits.porep.witness import compiled_porep

    return compiled_porep(size).to_r1cs()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", type=int, nargs="*", default=[16, 20], help="log2 constraints")
    ap.add_argument("--porep", nargs="*", default=["2KiB"], help="sector sizes")
    ap.add_argument("--skip-python", action="store_true", help="time the native path only")
    args = ap.parse_args()
    if not native.enabled():
        raise SystemExit("the native kernels are not built: pip install -e .")
    circuits = [(f"demo 2^{k}", lambda k=k: _demo(k)) for k in args.demo]
    circuits += [(f"porep {s}", lambda s=s: _porep(s)) for s in args.porep]
    rows = []
    for name, build in circuits:
        r1cs = build()
        nnz = r1cs.a.nnz + r1cs.b.nnz + r1cs.c.nnz
        paths = ["native"] if args.skip_python else ["python", "native"]
        res = {p: _measure(r1cs, p) for p in paths}
        same = "-" if args.skip_python else str(res["python"][2] == res["native"][2])
        rows.append((name, r1cs.num_constraints, r1cs.num_variables, nnz, res, same))
        del r1cs
    print(f"threads {native.threads()}, arithmetic {native.arithmetic()}, {os.cpu_count()} CPUs")
    print(
        f"{'circuit':<14}{'constraints':>12}{'variables':>11}{'nnz':>11}"
        f"{'python s':>10}{'MiB':>7}{'native s':>10}{'MiB':>7}{'speed-up':>9}  identical"
    )
    for name, m, v, nnz, res, same in rows:
        py = res.get("python", (float("nan"), float("nan"), ""))
        nt = res["native"]
        print(
            f"{name:<14}{m:>12}{v:>11}{nnz:>11}{py[0]:>10.2f}{py[1]:>7.0f}"
            f"{nt[0]:>10.3f}{nt[1]:>7.0f}{py[0] / nt[0]:>9.1f}  {same}"
        )


if __name__ == "__main__":
    main()
