"""The residency tiers' primitives beside the resident ones, on one GPU.

Rows (each checked equal to its resident twin on the same inputs):

- ``msm_g1`` / ``msm_g2``: bases resident; streamed from pinned host memory
  (one set, and two sets sharing each chunk: the time per set); resident but
  with only ``--room`` GiB of workspace free (the MSM in slices);
- ``h_poly``: the whole H step (three evaluations and four buffers) and the
  lean one (evaluations made lazily, two domain vectors), with each one's
  peak reservation.

``python3 -m cuzk.bench.tiers [--log-g1 26] [--log-g2 24] [--log-h 27] [--room 4]
[--json PATH]`` prints a table last; ``--stream-rooms 1.6,3.2`` times only the
streamed G1 MSM with that much room free (a lean partition's H). The ratios
are the cost of each tier on the prover's line; PCIe's rate is the bases'
bytes over the streamed pass's upload time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from cuzk.bench import timing
from cuzk.bench.inputs import make_bases, random_scalars_device

GIB = 1 << 30


def _ms(fn, reps: int = 3) -> float:
    return statistics.median(timing.time_ms(fn, warmup=1, reps=reps))


def stream_room_rows(be: Any, group: str, log_n: int, rooms_gib: list[float]) -> list[dict]:
    """One set's MSM over streamed bases of 2^log_n points with only ``room``
    GiB of the device free beside its scalars (a lean partition's room for
    H's MSM): the chunk and the window the pass fits to that room decide its
    time. Each row is checked equal to the first room's result."""
    import cupy

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine
    from cuzk.backends.cuda.msm.bases import fit_chunk

    n = 1 << log_n
    eng = be._msm_engine()
    dev_bases = make_bases(eng, group, n, seed=log_n)
    prepare = eng.prepare_g1 if group == "G1" else eng.prepare_g2
    streamed = prepare(dev_bases, resident=False)
    del dev_bases
    cupy.get_default_memory_pool().free_all_blocks()
    s1 = random_scalars_device(n, seed=1)
    rows, first = [], None
    for room in rooms_gib:
        ctx = DeviceContext(be.ctx.device_id, limit_bytes=int(s1.nbytes + room * GIB))
        small = MsmEngine(ctx)
        hold = ctx.budget.acquire(int(s1.nbytes), f"{group} scalars")
        got = small.msm_many(streamed, [s1])
        first = got if first is None else first
        chunk = fit_chunk(small, streamed.spec, n, on_host=False)
        t = _ms(lambda e=small: e.msm_many(streamed, [s1]), reps=2)
        rows.append(
            {
                "row": f"msm_{group.lower()} 2^{log_n} streamed, {room:g} GiB room "
                f"(chunks of 2^{chunk.bit_length() - 1})",
                "ms": t,
                "ratio": t / rows[0]["ms"] if rows else 1.0,
                "ok": got == first,
            }
        )
        hold.release()
        cupy.get_default_memory_pool().free_all_blocks()
    streamed.close()
    return rows


def msm_rows(be: Any, group: str, log_n: int, room_gib: float) -> list[dict]:
    """Resident, streamed (1 and 2 sets) and sliced MSMs of 2^log_n random scalars."""
    import cupy

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine

    n = 1 << log_n
    eng = be._msm_engine()
    dev_bases = make_bases(eng, group, n, seed=log_n)
    prepare = eng.prepare_g1 if group == "G1" else eng.prepare_g2
    msm_many = eng.msm_many
    resident = prepare(dev_bases, resident=True)
    streamed = prepare(dev_bases, resident=False)
    del dev_bases
    s1 = random_scalars_device(n, seed=1)
    s2 = random_scalars_device(n, seed=2)
    want = msm_many(resident, [s1, s2])
    rows = []
    t_res = _ms(lambda: msm_many(resident, [s1]))
    rows.append({"row": f"msm_{group.lower()} 2^{log_n} resident", "ms": t_res, "ratio": 1.0})
    phases: dict = {}
    got = msm_many(streamed, [s1, s2], phases)
    ok = got == want
    t1 = _ms(lambda: msm_many(streamed, [s1]))
    rows.append(
        {"row": f"msm_{group.lower()} 2^{log_n} streamed", "ms": t1, "ratio": t1 / t_res, "ok": ok}
    )
    t2 = _ms(lambda: msm_many(streamed, [s1, s2])) / 2
    bytes_up = n * (96 if group == "G1" else 192)
    upload_ms = phases.get("upload", 0.0)
    rows.append(
        {
            "row": f"msm_{group.lower()} 2^{log_n} streamed, 2 sets (a set)",
            "ms": t2,
            "ratio": t2 / t_res,
            "ok": ok,
            "pcie_gb_s": bytes_up / (upload_ms / 1e3) / 1e9 if upload_ms else None,
        }
    )
    # resident bases with little room: another context whose budget leaves
    # ``room_gib`` free beside the bases and the scalars (the pool's limit is
    # the process's: the next backend's context sets it again)
    streamed.close()
    cupy.get_default_memory_pool().free_all_blocks()
    words = resident.device
    held = int(words.nbytes + s1.nbytes + s2.nbytes)
    ctx = DeviceContext(be.ctx.device_id, limit_bytes=held + int(room_gib * GIB))
    small = MsmEngine(ctx)
    hold = ctx.budget.acquire(held, f"{group} bases and scalars")
    from cuzk.backends.cuda.msm.bases import PreparedBases

    view = PreparedBases(resident.spec, n, device=words)
    got_small = small.msm_many(view, [s1])
    t_small = _ms(lambda: small.msm_many(view, [s1]))
    rows.append(
        {
            "row": f"msm_{group.lower()} 2^{log_n} resident, {room_gib:g} GiB room",
            "ms": t_small,
            "ratio": t_small / t_res,
            "ok": got_small == want[:1],
        }
    )
    hold.release()
    resident.close()
    cupy.get_default_memory_pool().free_all_blocks()
    return rows


def hpoly_rows(be: Any, log_m: int) -> list[dict]:
    """The whole and the lean H step over random evaluations of 2^log_m values."""
    import cupy

    m = 1 << log_m
    rows_in = m - (m >> 4)  # a circuit's constraints: short of the domain
    a, b, c = (random_scalars_device(rows_in, seed=10 + i) for i in range(3))
    budget = be.ctx.budget
    want = be.h_poly(a, b, c)
    t_whole = _ms(lambda: be.h_poly(a, b, c))

    def padded(x):
        def make():
            out = cupy.zeros((m, 4), dtype=cupy.uint64)
            out[:rows_in] = x
            return out

        return make

    got = be.h_poly(padded(a), padded(b), padded(c))
    ok = bool(cupy.array_equal(got, want))
    del got, want
    t_lean = _ms(lambda: be.h_poly(padded(a), padded(b), padded(c)))
    peaks = {k: v for k, v in budget.peak_by_operation.items() if k.startswith("h_poly")}
    return [
        {"row": f"h_poly 2^{log_m} whole", "ms": t_whole, "ratio": 1.0},
        {
            "row": f"h_poly 2^{log_m} lean (its inputs made inside)",
            "ms": t_lean,
            "ratio": t_lean / t_whole,
            "ok": ok,
            "peaks_gib": {k: round(v / GIB, 3) for k, v in peaks.items()},
        },
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--log-g1", type=int, default=26)
    p.add_argument("--log-g2", type=int, default=24)
    p.add_argument("--log-h", type=int, default=27)
    p.add_argument("--room", type=float, default=4.0, help="GiB free beside resident bases")
    p.add_argument(
        "--stream-rooms",
        default=None,
        help="only the streamed G1 MSM at these rooms (GiB, comma-separated: 1.6,3.2)",
    )
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    if args.stream_rooms:
        rooms = [float(r) for r in args.stream_rooms.split(",")]
        rows = stream_room_rows(be, "G1", args.log_g1, rooms)
    else:
        rows = hpoly_rows(be, args.log_h)
        be.ntt_engine.release_tables()
        rows += msm_rows(be, "G1", args.log_g1, args.room)
        rows += msm_rows(CudaBackend(), "G2", args.log_g2, args.room)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r["row"] for r in rows if r.get("ok") is False]
    print(f"{'row':<52} {'ms':>9} {'ratio':>6}  check")
    for r in rows:
        extra = f" PCIe {r['pcie_gb_s']:.1f} GB/s" if r.get("pcie_gb_s") else ""
        ok = {True: "equal", False: "DIFFERS", None: ""}[r.get("ok")]
        print(f"{r['row']:<52} {r['ms']:9.1f} {r['ratio']:6.2f}  {ok}{extra}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
