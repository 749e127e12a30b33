"""The daemon driven the way Curio drives it (issue 14's acceptance).

``cuzk --config FILE`` as Curio's systemd unit starts it, over loopback TCP
with no token, by a client whose stubs are compiled from the .proto here
(curio_client.py), forming requests as Curio's tasks do:

- the backpressure probe (GetStatus under a 5 s deadline) while 20 PoRep
  proofs ``porep-<miner>-<sector>`` are in flight, counted as Curio counts
  them;
- those PoReps accepted and queued, then cancelled (a 2KiB PoRep takes
  minutes on two cores), and a retry after CANCELLED being a new attempt;
  on the GPU machine they complete instead;
- a synthetic PoRep (``cuzk-bench gen-c1 --synthetic``, proof type 10, as
  Curio seals with UseSyntheticPoRep): accepted and queued, then cancelled
  on the CPU; on the GPU machine proved and verified;
- a proofshare SnapDeals request with ``sector_size = 0``, accepted for the
  2KiB circuit (cancelled likewise on the CPU, proven on the GPU);
- a WindowPoSt proof that FAILED (its key was missing) retried after the
  operator fixed the config and restarted the daemon: proven this time;
- two WindowPoSt partitions under one request id (Curio's partition index is
  always 0): both COMPLETED, each with its own proof; an identical retry is
  answered by its job, not proven twice.

The WindowPoSt vanilla proofs come from ``cuzk-bench gen-vanilla
window-post``, 2KiB with development keys.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from curio_client import CurioClient, build_stubs

from cuzk.circuits.porep import synthetic
from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.circuits.post.circuit import public_inputs
from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.vanilla import read_sector_proof
from cuzk.cli.bench import main as bench
from cuzk.engine.kinds.base import KeyFiles
from cuzk.formats.bellperson import read_vk
from cuzk.groth16 import verifier
from cuzk.groth16.proof import Proof

MINER = 1000
WINDOW_2K = 10  # RegisteredPoStProof StackedDrgWindow2KiBV1_1
UPDATE_2K = 0  # RegisteredUpdateProof StackedDrg2KiBV1
SEAL_2K = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
SYNTH_2K = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1_Feat_SyntheticPoRep"]
# Curio masks the top bits of the last byte (tasks/window: randomness[31] &= 0x3f).
RND = bytes(range(1, 32)) + bytes([0x3F])
IN_FLIGHT = 20

CONFIG = """
# Curio's keys and its defaults, but loopback TCP: Curio's client sends no token.
[daemon]
listen = "127.0.0.1:{port}"
status_listen = "127.0.0.1:{status_port}"
shutdown_timeout = "60s"

[srs]
param_cache = "{home}/params"
generate_dev_keys = {dev_keys}

[memory]
total_budget = "{budget}"

[gpus]
backend = "{backend}"

[scheduler]
max_batch_size = {batch}
max_batch_wait_ms = {batch_wait}

[pipeline]
max_parallel_synthesis = 0
{pipeline}
"""


@dataclass
class Mode:
    prove_porep: bool  # the GPU machine proves the PoReps; the CPU queues and cancels them
    backend: str
    budget: str
    # The CPU holds PoRep and SnapDeals in a batch that never fills, so they stay
    # queued until cancelled (and never start a 2.7M-constraint synthesis).
    batch: int
    batch_wait: int
    pipeline: str = ""


CPU = Mode(False, "cpu", "4GiB", 32, 600_000)
GPU = Mode(True, "cuda", "64GiB", 1, 0, "synthesis_processes = 8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """``cuzk --config cuzk.toml`` in its own process."""

    def __init__(self, home: Path, mode: Mode, port: int, status_port: int) -> None:
        self.home, self.mode, self.port, self.status_port = home, mode, port, status_port
        self.proc: subprocess.Popen | None = None

    def start(self, dev_keys: bool) -> None:
        cfg = self.home / "cuzk.toml"
        cfg.write_text(
            CONFIG.format(
                port=self.port,
                status_port=self.status_port,
                home=self.home,
                dev_keys=str(dev_keys).lower(),
                budget=self.mode.budget,
                backend=self.mode.backend,
                batch=self.mode.batch,
                batch_wait=self.mode.batch_wait,
                pipeline=self.mode.pipeline,
            )
        )
        script = Path(sys.executable).with_name("cuzk")
        cmd = [str(script)] if script.exists() else [sys.executable, "-m", "cuzk.cli.main"]
        env = {
            **os.environ,
            "CUZK_HOME": str(self.home),
            "CUZK_CIRCUIT_CACHE": str(self.home / "circuits"),
        }
        with open(self.home / "daemon.log", "ab") as log:
            self.proc = subprocess.Popen(
                [*cmd, "--config", str(cfg)], env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=120)
        finally:
            self.proc = None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return (self.home / "daemon.log").read_text(errors="replace")

    def http_status(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.status_port}/status"  # loopback: no token
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)


def in_flight(status: Any) -> int:
    return sum(q.pending + q.in_progress for q in status.queues)


def wait_until(what: str, check, timeout: float = 120.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


def window_vanilla(tmp: Path, first_sector: int) -> list[bytes]:
    """Two sectors' WindowPoSt vanilla proofs, from cuzk-bench gen-vanilla."""
    out = tmp / f"wpost-{first_sector}.json"
    argv = ["gen-vanilla", "window-post", "--registered-proof", str(WINDOW_2K), "--sectors", "2"]
    argv += ["--sector-number", str(first_sector), "--miner-id", str(MINER)]
    argv += ["--randomness", RND.hex(), "-o", str(out)]
    assert bench(argv) == 0
    return [base64.b64decode(s) for s in json.loads(out.read_text())]


def snap_vanilla(tmp: Path) -> tuple[list[bytes], dict[str, str]]:
    out = tmp / "snap.json"
    rc = bench(["gen-vanilla", "snap-prove", "--registered-proof", str(UPDATE_2K), "-o", str(out)])
    assert rc == 0
    proofs = [base64.b64decode(s) for s in json.loads(out.read_text())]
    from cuzk.cli.bench_vanilla import snap_vanilla as commitments

    return proofs, commitments(UPDATE_2K)[1]


def check_window_proof(home: Path, vanilla: list[bytes], proof: bytes, other: list[bytes]) -> None:
    """The returned proof verifies for its own sectors, and not for the other partition's."""
    vk = read_vk(home / "params" / KeyFiles.filecoin("wpost-2k").vk)
    cfg = config_for_registered_proof(WINDOW_2K)

    def pub(proofs: list[bytes]) -> list[int]:
        sectors = [read_sector_proof(b) for b in proofs]
        return public_inputs(cfg, RND, [(s.sector_id, s.comm_r) for s in sectors], 0)

    assert len(proof) == 192
    assert verifier.verify(vk, pub(vanilla), Proof.from_bytes(proof))
    assert not verifier.verify(vk, pub(other), Proof.from_bytes(proof))


def check_porep_proof(home: Path, raw: bytes, proof: bytes) -> None:
    """A synthetic PoRep's proof verifies with the synthetic challenges' inputs."""
    from cuzk.circuits.porep.c1 import load_c1_file
    from cuzk.circuits.porep.witness import c1_public_inputs

    c1, _ = load_c1_file(raw, "c1.json")
    vk = read_vk(home / "params" / KeyFiles.filecoin("porep-2k").vk)
    pub = c1_public_inputs(c1, SYNTH_2K, 0)
    assert len(proof) == 192 and verifier.verify(vk, pub, Proof.from_bytes(proof))


def run_conformance(tmp_path: Path, mode: Mode) -> None:
    home = tmp_path / "home"
    home.mkdir()
    stubs = build_stubs(tmp_path)
    status = stubs.enums["AwaitProofResponse.Status"]
    completed, failed, cancelled = status["COMPLETED"], status["FAILED"], status["CANCELLED"]
    daemon = Daemon(home, mode, free_port(), free_port())
    addr = f"127.0.0.1:{daemon.port}"
    part_a, part_b = window_vanilla(tmp_path, 1), window_vanilla(tmp_path, 3)
    curio = CurioClient(stubs, addr, max_pending=IN_FLIGHT)
    wd_a = curio.window_post_request(MINER, WINDOW_2K, 2048, RND, part_a)
    wd_b = curio.window_post_request(MINER, WINDOW_2K, 2048, RND, part_b)
    rid = f"wdpost-{MINER}-0-[1 2 3 4 5 6 7 8]"  # as Go's %d writes randomness[:8]
    assert wd_a.request_id == wd_b.request_id == rid

    try:
        # --- 1. A WindowPoSt proof FAILS: no key for it (no dev keys allowed yet). ---
        daemon.start(dev_keys=False)
        curio.wait_ready()
        r = curio.prove(wd_a)
        assert r.status == failed and r.error_message and r.job_id == rid
        assert daemon.stop() == 0

        # --- 2. The operator allows development keys and restarts the daemon. ---------
        daemon.start(dev_keys=True)
        curio.wait_ready()

        # 20 PoRep proofs in flight, as Curio's PoRep tasks send them (one c1 output,
        # wrapped per sector as lib/ffi wraps it).
        c1 = synthetic.generate_c1(SEAL_2K, random.Random(7), MINER, 1)
        phase1 = dumps_c1(c1)
        porep = [
            curio.porep_request(
                MINER, n, dumps_wrapper(C1Wrapper(n, phase1, 2048)), 2048, SEAL_2K.proof_id
            )
            for n in range(1, IN_FLIGHT + 1)
        ]
        results: dict[str, Any] = {}

        def prove(req: Any) -> None:
            results[req.request_id] = curio.prove(req)

        threads = [threading.Thread(target=prove, args=(req,)) for req in porep]
        for t in threads:
            t.start()
        # Curio's backpressure probe: all 20 counted (or finished, on the GPU).
        st = wait_until(
            "20 PoRep proofs in flight",
            lambda: (
                (s := curio.get_status())
                and in_flight(s) + s.total_proofs_completed + s.total_proofs_failed == IN_FLIGHT
                and s
            ),
        )
        assert {q.proof_kind for q in st.queues} <= {"porep-c2"}  # Curio's names
        if not mode.prove_porep:
            (q,) = st.queues
            assert (q.pending, q.in_progress) == (IN_FLIGHT, 0)  # accepted and queued
            assert curio.has_capacity() == 0  # "cuzk pipeline full, backpressuring"
            for req in porep:
                assert curio.cancel(req.request_id).was_running is False
        for t in threads:
            t.join(timeout=3600)
        want = completed if mode.prove_porep else cancelled
        assert sorted(results) == sorted(req.request_id for req in porep)
        for req in porep:
            res = results[req.request_id]
            assert res.status == want, (req.request_id, res.error_message)
            assert res.job_id == req.request_id
            assert len(res.proof) == (192 if mode.prove_porep else 0)
        assert curio.has_capacity() == IN_FLIGHT
        if not mode.prove_porep:
            assert daemon.http_status()["pipelines"] == []  # never started, never proven

        # A synthetic PoRep, as Curio sends one with UseSyntheticPoRep (proof type 10).
        synth_c1 = tmp_path / "synthetic-c1.json"
        argv = ["gen-c1", "--sector-size", "2KiB", "--synthetic", "--out", str(synth_c1)]
        assert bench([*argv, "--sector-num", "77", "--miner-id", str(MINER)]) == 0
        synth = curio.porep_request(MINER, 77, synth_c1.read_bytes(), 2048, SYNTH_2K.proof_id)
        synth_result: list[Any] = []
        t = threading.Thread(target=lambda: synth_result.append(curio.prove(synth)))
        t.start()
        if not mode.prove_porep:
            wait_until(
                "the synthetic PoRep queued",
                lambda: (
                    [(q.proof_kind, q.pending) for q in curio.get_status().queues]
                    == [("porep-c2", 1)]
                ),
            )
            curio.cancel(synth.request_id)
        t.join(timeout=3600)
        (res,) = synth_result
        assert res.status == (completed if mode.prove_porep else cancelled), res.error_message
        if mode.prove_porep:
            check_porep_proof(home, synth_c1.read_bytes(), res.proof)

        # A proofshare SnapDeals request: no sector_size, the update proof type decides.
        snap_proofs, comms = snap_vanilla(tmp_path)
        snap = curio.proofshare_snap_request(
            MINER,
            9,
            42,
            UPDATE_2K,
            snap_proofs,
            *(bytes.fromhex(comms[k]) for k in ("comm_r_old", "comm_r_new", "comm_d_new")),
        )
        assert snap.sector_size == 0
        snap_result: list[Any] = []
        t = threading.Thread(target=lambda: snap_result.append(curio.prove(snap)))
        t.start()
        if not mode.prove_porep:
            wait_until(
                "the SnapDeals job queued",
                lambda: (
                    [(q.proof_kind, q.pending) for q in curio.get_status().queues]
                    == [("snap-update", 1)]
                ),
            )
            curio.cancel(snap.request_id)
        t.join(timeout=3600)
        (res,) = snap_result
        assert res.status == (completed if mode.prove_porep else cancelled), res.error_message

        # The FAILED WindowPoSt, retried unchanged: a new attempt, proven.
        retry = curio.prove(wd_a)
        assert retry.status == completed, retry.error_message
        assert retry.job_id == f"{rid}#2"
        check_window_proof(home, part_a, retry.proof, part_b)
        # Another partition under the same request id: its own job and proof.
        other = curio.prove(wd_b)
        assert other.status == completed, other.error_message
        assert other.job_id == f"{rid}#3"
        check_window_proof(home, part_b, other.proof, part_a)
        # Curio's retry of a COMPLETED proof: answered by its job, not proven again.
        again = curio.prove(wd_a)
        assert (again.job_id, again.proof) == (retry.job_id, retry.proof)
        st = curio.get_status()
        wpost_done = 2
        assert st.total_proofs_completed == wpost_done + (IN_FLIGHT + 2 if mode.prove_porep else 0)

        if not mode.prove_porep:
            # A PoRep retried after CANCELLED: a new attempt, accepted and queued.
            t = threading.Thread(target=lambda: results.update(retry=curio.prove(porep[0])))
            t.start()
            wait_until("the new PoRep attempt queued", lambda: in_flight(curio.get_status()) == 1)
            assert curio.cancel(f"{porep[0].request_id}#2").was_running is False
            t.join(timeout=60)
            assert results["retry"].job_id == f"{porep[0].request_id}#2"
            assert results["retry"].status == cancelled

        # Curio's metric names and /status keys, from the same daemon.
        metrics = curio.metrics().splitlines()
        assert f'cuzk_proofs_completed{{proof_kind="window_post"}} {wpost_done}' in metrics
        assert "cuzk_queue_depth 0.0" in metrics
        http = daemon.http_status()
        assert http["counters"]["completed_by_kind"]["window-post"] == wpost_done
        assert http["counters"]["queue_depth"] == 0
        assert daemon.stop() == 0
    finally:
        curio.close()
        daemon.kill()
    log = daemon.log()
    assert "plain TCP without a bearer token on loopback" in log
    assert f"config: {home / 'cuzk.toml'}" in log


@pytest.mark.slow
def test_curio_drives_the_daemon_on_the_cpu(tmp_path: Path) -> None:
    run_conformance(tmp_path, CPU)


@pytest.mark.gpu
@pytest.mark.slow
def test_curio_drives_the_daemon_on_the_gpu_poreps_complete(tmp_path: Path) -> None:
    run_conformance(tmp_path, GPU)
