"""The first proof's latency on a warm engine: from submission to acceptance,
to the first partition on the prover, and to the proof.

``python -m cuzk.bench.first_proof --params DIR [--settle 20] [--processes 2]
[--json PATH]`` seals a random 2KiB sector, starts an engine in this process
(CPU backend unless ``--backend``; the witness made from the circuit's static
plan as on a GPU; ``--processes`` synthesis processes), preloads ``porep-2k``
from the key in ``DIR`` (a warm daemon), waits ``--settle`` seconds, submits
the sector's c1.json and prints the three times (seconds after submission)
and each partition's stage times as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofRequest


def measure(engine: Engine, request: ProofRequest, timeout: float = 3600.0) -> dict[str, Any]:
    """Submit ``request`` to a started engine and time its way to a proof:
    seconds after submission to acceptance (``accepted_s``), to its first
    partition entering the prover (``first_prover_s``) and to the proof
    (``proof_s``), each partition's (synthesis start, synthesis end, prover
    start) and the job's state."""
    t0 = time.monotonic()
    job_id = engine.submit(request).job_id
    accepted = time.monotonic() - t0
    job, _ = engine.await_job(job_id, timeout)
    done = time.monotonic() - t0

    def rel(v: float | None) -> float | None:
        return None if v is None else round(v - t0, 3)

    starts = [t.gpu_start for t in job.trace.values() if t.gpu_start is not None]
    return {
        "state": job.state.name,
        "error": job.error,
        "accepted_s": round(accepted, 3),
        "first_prover_s": rel(min(starts)) if starts else None,
        "proof_s": round(done, 3) if job.state == JobState.COMPLETED else None,
        "partitions": {
            k: {"synthesis": [rel(t.synth_start), rel(t.synth_end)], "prover": rel(t.gpu_start)}
            for k, t in sorted(job.trace.items())
        },
    }


def _c1_json() -> bytes:
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper

    _, c1 = seal_random(REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"], random.Random(7))
    return dumps_wrapper(C1Wrapper(234, dumps_c1(c1), 2048))


def main(argv: list[str] | None = None) -> int:
    from cuzk.engine.config import Config
    from cuzk.engine.jobs import ProofKind

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", required=True, help="folder holding the porep-2k key files")
    p.add_argument("--home", default=None, help="folder for the journal (default: a temporary one)")
    p.add_argument("--settle", type=float, default=20.0, help="seconds idle after the preload")
    p.add_argument("--processes", type=int, default=2, help="synthesis processes")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    import tempfile

    home = Path(args.home or tempfile.mkdtemp(prefix="cuzk-first-proof-"))
    cfg = Config().with_overrides(
        daemon={"journal": str(home / "journal.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": args.params, "generate_dev_keys": True},
        memory={"total_budget": "12GiB"},
        gpus={"backend": args.backend},
        pipeline={
            "witness": "device",
            "synthesis_processes": args.processes,
            "synthesis_concurrency": max(1, args.processes),
        },
    )
    raw = _c1_json()
    engine = Engine(cfg)
    engine.start()
    try:
        t = time.monotonic()
        engine.preload("porep-2k")
        preload = time.monotonic() - t
        time.sleep(args.settle)
        req = ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=raw, sector_size=2048)
        out = {"preload_s": round(preload, 3), **measure(engine, req)}
    finally:
        engine.stop()
    text = json.dumps(out, indent=1)
    sys.stdout.write(text + "\n")
    if args.json:
        Path(args.json).write_text(text)
    return 0 if out["state"] == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
