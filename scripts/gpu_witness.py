"""The GPU witness on a real device: bit-exact against the CPU witness, and timed.

For each case (kind and sector size) it makes test data (a synthetic C1 for
PoRep, a generated sector for SnapDeals and PoSt), records the static plan
(or loads it from the circuit cache), runs the partition's witness on the
GPU (``CudaWitness``) — once pass by pass with the device synchronised
after each (per-pass times), then ``--repeat`` times as the engine would
(waves of passes on streams) — and, unless ``--no-check``, compares the
assignment with the CPU witness bit for bit. One JSON line per case.

    python3 scripts/gpu_witness.py porep:2KiB porep:8MiB porep:32GiB
    python3 scripts/gpu_witness.py --no-check --repeat 5 porep:32GiB

The 32GiB CPU witness takes ~30 s and ~5 GiB of host memory; the device
needs ~4.2 GB for the assignment and ~0.1 GB for the plan.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def case(kind: str, size: str, seed: int):
    """(circuit id, static plan builder, hints, CPU witness function)."""
    from cuzk.synthesis.compile import Compiler

    compiler = Compiler()
    rng = random.Random(seed)
    if kind == "porep":
        from cuzk.circuits.porep import witness as pw
        from cuzk.circuits.porep.circuit import PoRepShape
        from cuzk.circuits.porep.params import default_proof, parse_size
        from cuzk.circuits.porep.synthetic import generate_c1

        pt = default_proof(parse_size(size))
        k = pt.sector.partitions - 1
        c1 = generate_c1(pt, rng, partitions=[k])
        shape = PoRepShape.of(pt.sector)
        cc = pw.compiled_porep(size)
        hints = pw.partition_hints(c1, k)
        return (
            cc,
            lambda: pw.static_plan(cc, shape, hints, compiler),
            hints,
            lambda: pw.partition_witness(cc, shape, hints, compiler).W,
        )
    if kind == "snap":
        from cuzk.circuits.update import witness as sw
        from cuzk.circuits.update.generate import generate_sector
        from cuzk.circuits.update.params import UpdateParams

        p = UpdateParams.of(size)
        sector = generate_sector(p, rng)
        k = p.partition_count - 1
        roots = (sector.comm_r_old, sector.comm_d_new, sector.comm_r_new)
        hints = sw.partition_hints(p, sector.partition_proof(k), k, sector.h, *roots)
        cc = sw.compiled_snap(size)
        return (
            cc,
            lambda: sw.static_plan(cc, p, hints, compiler),
            hints,
            lambda: sw.partition_witness(cc, p, hints, compiler).W,
        )
    from cuzk.circuits.catalog import compiled_circuit
    from cuzk.circuits.post.circuit import witness
    from cuzk.circuits.post.config import post_config
    from cuzk.circuits.post.device_witness import slot_hint_arrays, static_plan
    from cuzk.circuits.post.generate import generate_sector_proof

    config = post_config(kind, size)
    proofs = [generate_sector_proof(config, bytes(32), seed)]
    cc = compiled_circuit(kind, size)
    hints = slot_hint_arrays(config, proofs)
    return (
        cc,
        lambda: static_plan(cc, config, hints, compiler),
        hints,
        lambda: witness(cc, config, proofs, processes=8),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+", help="KIND:SIZE (porep, snap, window-post, winning-post)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-check", action="store_true", help="skip the CPU witness comparison")
    args = ap.parse_args()

    import cupy

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.witness import CudaWitness
    from cuzk.synthesis.static_plan import load_or_build

    ctx = DeviceContext()
    status = 0
    for spec in args.cases:
        device = CudaWitness(ctx)
        kind, size = spec.split(":")
        out: dict = {"case": spec}
        t0 = time.perf_counter()
        cc, build, hints, cpu = case(kind, size, args.seed)
        out["setup_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        plan = load_or_build(cc.circuit_id, build)
        out["plan_s"] = round(time.perf_counter() - t0, 3)
        out["passes"] = len(plan.passes)
        out["instructions"] = sum(p.program.num_ops for p in plan.passes)
        out["lane_instructions"] = sum(p.program.num_ops * p.lanes.lanes for p in plan.passes)
        t0 = time.perf_counter()
        W = plan.run(device, hints, timed=True)  # first run: uploads, per-pass times
        device.synchronize()
        out["first_run_s"] = round(time.perf_counter() - t0, 4)
        out["per_pass_ms"] = {
            f"{key} x{lanes}": round(1e3 * secs, 3) for key, lanes, _, secs in plan.stats
        }
        device.free(W)
        times = []
        for _ in range(args.repeat):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            W = plan.run(device, hints)
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
            if len(times) < args.repeat:
                device.free(W)
        out["witness_s"] = [round(t, 4) for t in times]
        out["waves_ms"] = [round(1e3 * secs, 3) for _, _, _, secs in plan.stats]
        out["assignment_bytes"] = 32 * (plan.n_inputs + plan.n_aux)
        out["plan_device_bytes"] = sum(h.nbytes for h in device.holds)
        if not args.no_check:
            t0 = time.perf_counter()
            want = cpu()
            out["cpu_witness_s"] = round(time.perf_counter() - t0, 2)
            got = cupy.asnumpy(W)
            bad = np.flatnonzero((got != want).any(axis=1))
            out["equal"] = bool(len(bad) == 0)
            out["differing_rows"] = len(bad)
            if len(bad):
                out["first_differing_rows"] = bad[:10].tolist()
                status = 1
        device.free(W)
        del W
        plan.forget(device)
        device.release()
        out["device_peak_pass_bytes"] = max(
            v for k, v in ctx.budget.peak_by_operation.items() if k.startswith("witness pass")
        )
        out["host_peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        print(json.dumps(out), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
