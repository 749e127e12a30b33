"""Groth16 setup's query scalars: the Python-int reference against the native kernels.

    .venv/bin/python -m cuzk.bench.query_scalars [--demo 16 20] [--porep 2KiB]
        [--tiled 6] [--python-max 4000000] [--repeat 3]

For each circuit, each path runs in its own forked process (so one's
garbage does not weigh on the other's peak) and reports its wall time (the
best of --repeat runs for the native path), its CPU time (all threads) and
its peak resident memory above the R1CS it starts from (VmHWM after
resetting it through /proc/self/clear_refs); the two results are compared
bit for bit by hashing every query array. ``--tiled k`` adds k copies of the
2KiB PoRep partition side by side (public inputs shared, aux variables
renumbered): a PoRep-shaped circuit of k·2.69 M constraints (k = 6: a 2^24
domain). The Python path is skipped above --python-max constraints. A table
is printed last.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import time

from cuzk.backends import native
from cuzk.bench.hostmem import status_kib
from cuzk.bench.timing import cpu_seconds
from cuzk.groth16 import setup


def _run(r1cs, path: str, repeat: int, conn) -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    (base,) = status_kib("self", "VmRSS")
    fn = setup.query_scalars_python if path == "python" else setup.query_scalars
    best = (float("inf"), 0.0)
    q = None
    for _ in range(repeat):
        q = None  # the previous run's arrays must not count in this one's peak
        t, c = time.perf_counter(), cpu_seconds()
        q = fn(r1cs, setup.ToxicWaste.draw(seed=5))
        best = min(best, (time.perf_counter() - t, cpu_seconds() - c))
    peak = status_kib("self", "VmHWM")[0] - base
    digest = hashlib.sha256()
    for name in ("ic", "l", "h", "a", "b"):
        digest.update(getattr(q, name).tobytes())
    conn.send((*best, peak / 1024, digest.hexdigest()))


def _measure(r1cs, path: str, repeat: int) -> tuple[float, float, float, str]:
    ctx = mp.get_context("fork")
    rx, tx = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_run, args=(r1cs, path, repeat, tx))
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


def _tiled(k: int):
    """k copies of the 2KiB PoRep partition's matrices, aux variables renumbered."""
    import numpy as np

    from cuzk.algebra.sparse import SparseMatrix
    from cuzk.r1cs.system import R1CS

    one = _porep("2KiB")
    ni, na = one.num_inputs, one.num_aux
    mats = []
    for m in (one.a, one.b, one.c):
        indices = np.concatenate(
            [np.where(m.indices < ni, m.indices, m.indices + t * na) for t in range(k)]
        )
        indptr = np.concatenate([m.indptr[:-1] + t * m.nnz for t in range(k)] + [[k * m.nnz]])
        mats.append(SparseMatrix(indptr, indices, np.tile(m.coeffs, (k, 1)), ni + k * na))
    return R1CS(ni, k * na, *mats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", type=int, nargs="*", default=[16, 20], help="log2 constraints")
    ap.add_argument("--porep", nargs="*", default=["2KiB"], help="sector sizes")
    ap.add_argument("--tiled", type=int, nargs="*", default=[], help="copies of PoRep 2KiB")
    ap.add_argument("--python-max", type=int, default=4_000_000, help="constraints")
    ap.add_argument("--repeat", type=int, default=3, help="native runs (best is kept)")
    args = ap.parse_args()
    if not native.enabled():
        raise SystemExit("the native kernels are not built: pip install -e .")
    circuits = [(f"demo 2^{k}", lambda k=k: _demo(k)) for k in args.demo]
    circuits += [(f"porep {s}", lambda s=s: _porep(s)) for s in args.porep]
    circuits += [(f"porep 2KiB×{k}", lambda k=k: _tiled(k)) for k in args.tiled]
    rows = []
    for name, build in circuits:
        r1cs = build()
        nnz = r1cs.a.nnz + r1cs.b.nnz + r1cs.c.nnz
        paths = ["native"] if r1cs.num_constraints > args.python_max else ["python", "native"]
        res = {p: _measure(r1cs, p, 1 if p == "python" else args.repeat) for p in paths}
        same = str(res["python"][3] == res["native"][3]) if "python" in res else "-"
        rows.append((name, r1cs.num_constraints, nnz, res, same))
        del r1cs
    print(f"threads {native.threads()}, arithmetic {native.arithmetic()}, {os.cpu_count()} CPUs")
    print(
        f"{'circuit':<15}{'constraints':>12}{'nnz':>11}"
        f"{'python s':>10}{'cpu s':>8}{'MiB':>7}{'native s':>10}{'cpu s':>8}{'MiB':>7}"
        f"{'speed-up':>9}  identical"
    )
    nan = (float("nan"),) * 3
    for name, m, nnz, res, same in rows:
        py, nt = res.get("python", nan), res["native"]
        print(
            f"{name:<15}{m:>12}{nnz:>11}{py[0]:>10.2f}{py[1]:>8.2f}{py[2]:>7.0f}"
            f"{nt[0]:>10.3f}{nt[1]:>8.3f}{nt[2]:>7.0f}{py[0] / nt[0]:>9.1f}  {same}"
        )


if __name__ == "__main__":
    main()
