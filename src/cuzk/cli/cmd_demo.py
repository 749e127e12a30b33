"""The demo: ``cuzk demo`` sets up, proves and verifies the built-in demo circuit,
with timings (the prover alone, ``make prove-demo``); ``cuzk-bench demo-service``
(the README's main job, ``make demo``) starts a daemon on the built-in
defaults, runs a batch of demo proofs against it and stops it."""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends import get_backend
from cuzk.bench.timing import StageClock
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="set up, prove and verify the built-in demo circuit")
    p.add_argument("--constraints", type=int, default=4000, help="approximate circuit size")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--proofs", type=int, default=2, help="proofs to generate (and batch-verify)")
    p.add_argument(
        "--seed", type=int, default=None, help="seeded (INSECURE) setup, for repeatability"
    )
    p.add_argument("--json", action="store_true", help="print the timings as JSON")
    p.set_defaults(func=run)


def register_service(sub: argparse._SubParsersAction) -> None:
    """``cuzk-bench demo-service``."""
    p = sub.add_parser(
        "demo-service", help="start a daemon on the built-in defaults, run a batch, stop it"
    )
    p.add_argument("-c", "--count", type=int, default=8)
    p.add_argument("-j", "--concurrency", type=int, default=4)
    p.add_argument("--constraints", type=int, default=2000, help="demo circuit size")
    p.add_argument("--partitions", type=int, default=2, help="partitions per proof")
    p.add_argument("--home", help="daemon state folder (default: a temporary one)")
    p.set_defaults(func=cmd_demo_service)


def _synthesize(circuit: DemoCircuit, x: int | None, words: list[int] | None, witness: bool):
    cs = ConstraintSystem(witness=witness)
    circuit.synthesize(cs, x, words)
    return cs


def run(args: argparse.Namespace) -> int:
    circuit = DemoCircuit.with_constraints(args.constraints)
    backend = get_backend(args.backend)
    clock = StageClock()
    times, mark = clock.seconds, clock.mark
    t = time.perf_counter()
    r1cs = _synthesize(circuit, None, None, witness=False).r1cs()
    t = mark("compile", t)
    pk = setup.setup(r1cs, seed=args.seed)
    t = mark("setup", t)
    key = prover.prepare(pk, r1cs, backend)
    t = mark("load key", t)
    print(
        f"demo circuit: {r1cs.num_constraints} constraints, {r1cs.num_inputs} inputs "
        f"(ONE included), {r1cs.num_aux} aux; backend {backend.name}"
    )
    stage_times = prover.StageTimes()
    items = []
    for i in range(args.proofs):
        x = secrets.randbelow(R)
        words = [secrets.randbits(64) for _ in range(circuit.words)]
        t = time.perf_counter()
        cs = _synthesize(circuit, x, words, witness=True)
        assignment = fr_to_array(cs.assignment())
        t = mark("synthesize", t)
        proof = prover.prove(key, r1cs, assignment, times=stage_times)
        t = mark("prove", t)
        ok = verifier.verify(pk.vk, cs.public_inputs(), proof)
        t = mark("verify", t)
        if not ok or cs.public_inputs()[1] != circuit.evaluate(x, words):
            print(f"proof {i}: NOT VERIFIED")
            return 1
        items.append((cs.public_inputs(), proof))
        print(f"proof {i}: verified ({proof.to_bytes()[:8].hex()}…)")
    t = time.perf_counter()
    if not verifier.verify_batch(pk.vk, items):
        print("batch verification FAILED")
        return 1
    mark("batch verify", t)
    for stage, sec in stage_times.seconds.items():
        times[f"prove.{stage}"] = sec
    if args.json:
        print(json.dumps({"constraints": r1cs.num_constraints, "seconds": times}, indent=2))
    else:
        print(f"batch of {len(items)} verified with one final exponentiation")
        print("stage                 seconds")
        for stage, sec in times.items():
            print(f"  {stage:<20}{sec:8.3f}")
    return 0


READY_TIMEOUT_S = 900.0  # a first start on a GPU compiles every kernel before it is ready
_LINE = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: (.*)$")
_SAID = re.compile(r" (?:WARNING|ERROR) | backend: | kernels: (?:loading|ready)")


def daemon_log_summary(path: Path, tail: bool = False) -> str:
    """What the daemon's log says of its start: its backend and why, its kernels,
    any warning or error (``tail``: the log's last lines, when it did not start)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    said = [line for line in lines if _SAID.search(line)]
    if tail:
        said += [line for line in lines[-10:] if line not in said]
    out = []
    for line in said:
        m = _LINE.search(line)
        if m is None:
            out.append(line)
        else:
            out.append(m.group(2) if m.group(1) == "INFO" else f"{m.group(1)}: {m.group(2)}")
    return "\n".join(f"  daemon: {line}" for line in out) or f"  (see {path})"


def cmd_demo_service(args: argparse.Namespace) -> int:
    from cuzk.cli.bench_service import guard

    return guard(_demo_service)(args)


def _demo_service(args: argparse.Namespace) -> int:
    import grpc

    from cuzk.bench.load import ProofTemplate, run_batch
    from cuzk.engine.jobs import ProofKind
    from cuzk.engine.kinds import demo
    from cuzk.service.client import Client
    from cuzk.service.proto import proving_pb2 as pb

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cuzk-demo-") as tmp:
        home = Path(args.home) if args.home else Path(tmp)
        home.mkdir(parents=True, exist_ok=True)
        sock = home / "cuzk.sock"
        env = {**os.environ, "CUZK_HOME": str(home)}
        log_path = home / "daemon.log"
        cmd = [sys.executable, "-m", "cuzk.service.daemon_main", "--no-config"]
        cmd += ["--log-level", "info"]  # built-in defaults, whatever /data/zk/cuzk.toml says
        print(f"starting cuzk-daemon on built-in defaults (CUZK_HOME={home}; log {log_path})")
        with open(log_path, "wb") as log_file:
            daemon = subprocess.Popen(cmd, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            with Client(f"unix://{sock}") as c:
                status, waited = None, 0
                while status is None:
                    try:
                        status = c.wait_ready(timeout=5)
                    except grpc.RpcError as e:
                        waited += 1
                        if waited == 1:
                            print(
                                "waiting for the daemon (a first start on a GPU compiles its "
                                f"CUDA kernels before it is ready: about a minute; log {log_path})",
                                flush=True,
                            )
                        if daemon.poll() is None and time.perf_counter() - t0 < READY_TIMEOUT_S:
                            continue
                        print(f"the daemon did not come up: {e.details()}")
                        print(daemon_log_summary(log_path, tail=True))
                        return 1
                dev = status.gpus[0].name if status.gpus else "?"
                print(f"daemon ready in {time.perf_counter() - t0:.1f}s (device: {dev})")
                print(daemon_log_summary(log_path) + "\n")
                tpl = ProofTemplate(
                    ProofKind.DEMO,
                    pb.SubmitProofRequest(proof_kind=int(ProofKind.DEMO)),
                    demo.circuit_for_constraints(args.constraints),
                    args.partitions,
                )
                rc = run_batch(c, tpl, "demo", args.count, args.concurrency)
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                code = daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.kill()
                code = daemon.wait()
        print(f"\ndaemon stopped (exit {code}); demo-service took {time.perf_counter() - t0:.1f}s")
        return rc if code == 0 else 1
