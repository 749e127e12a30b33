"""cuzk-daemon as a process: SIGKILL mid-batch and restart, SIGTERM drain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import KeyFiles
from cuzk.formats.bellperson import read_vk
from cuzk.groth16 import verifier
from cuzk.groth16.proof import decode_proofs
from cuzk.service.client import Client
from cuzk.service.proto import proving_pb2 as pb

CIRCUIT = DemoCircuit.with_constraints(1200)
CONFIG = """
[daemon]
listen = "unix://{home}/cuzk.sock"
shutdown_timeout = "60s"

[memory]
total_budget = "2GiB"

[gpus]
backend = "cpu"
gpu_workers_per_device = 2

[srs]
param_cache = "{home}/params"
"""


def start(home: Path) -> subprocess.Popen:
    cfg = home / "cuzk.toml"
    cfg.write_text(CONFIG.format(home=home))
    env = {**os.environ, "CUZK_HOME": str(home)}
    log = open(home / "daemon.log", "ab")  # noqa: SIM115 (the daemon keeps it)
    return subprocess.Popen(
        [sys.executable, "-m", "cuzk.service.daemon_main", "--config", str(cfg)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def client(home: Path) -> Client:
    c = Client(f"unix://{home}/cuzk.sock")
    c.wait_ready(timeout=60)
    return c


def request(partitions: int = 2) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(
        proof_kind=pb.CUZK_DEMO, vanilla_proof=demo.make_vanilla(CIRCUIT, partitions)
    )


def verify(home: Path, req: pb.SubmitProofRequest, proof: bytes) -> bool:
    body = json.loads(req.vanilla_proof)
    cid = demo.circuit_id(body["rounds"], body["words"])
    vk = read_vk(home / "params" / KeyFiles.development(cid).vk)
    c = DemoCircuit(body["rounds"], body["words"])
    proofs = decode_proofs(proof)
    return len(proofs) == len(body["instances"]) and all(
        verifier.verify(
            vk, [int(i["x"]), c.evaluate(int(i["x"]), [int(s) for s in i["secrets"]])], p
        )
        for i, p in zip(body["instances"], proofs, strict=True)
    )


@pytest.mark.slow
def test_sigkill_mid_batch_then_restart_finishes_every_accepted_job(tmp_path: Path) -> None:
    proc = start(tmp_path)
    try:
        c = client(tmp_path)
        reqs = [request() for _ in range(6)]
        ids = [c.submit(r).job_id for r in reqs]
        # Kill once some work is done and some is not.
        end = time.monotonic() + 120
        while True:
            states = [c.await_proof(j, timeout_ms=1).status for j in ids]
            done = sum(s == pb.AwaitProofResponse.COMPLETED for s in states)
            if done >= 1:
                break
            assert time.monotonic() < end, "no job completed"
            time.sleep(0.05)
        assert done < len(ids), "too late: every job had finished"
        c.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    proc = start(tmp_path)
    try:
        c = client(tmp_path)
        for r, job_id in zip(reqs, ids, strict=True):
            resp = c.await_proof(job_id, timeout_ms=120_000)
            assert resp.status in (pb.AwaitProofResponse.COMPLETED, pb.AwaitProofResponse.FAILED)
            if resp.status == pb.AwaitProofResponse.FAILED:
                assert resp.error_message  # a reason, always
            else:
                assert verify(tmp_path, r, resp.proof)
        # None vanished, and here every one could be resumed: all completed.
        assert all(c.await_proof(j).status == pb.AwaitProofResponse.COMPLETED for j in ids)
        log = (tmp_path / "daemon.log").read_text()
        assert "unfinished job(s) resumed" in log
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_drains_accepted_work(tmp_path: Path, signum: int) -> None:
    """SIGINT (Ctrl-C, and what Curio's Rust daemon listens for) drains as SIGTERM does."""
    proc = start(tmp_path)
    try:
        c = client(tmp_path)
        # Enough accepted work (3 jobs of 8 partitions: seconds on two cores) that the
        # daemon is still draining when the refused submissions below arrive; with a
        # little, it could finish and take its socket away between two of them.
        reqs = [request(8) for _ in range(3)]
        ids = [c.submit(r).job_id for r in reqs]
        # Clients already waiting on their proofs get them before the daemon exits.
        with ThreadPoolExecutor(3) as pool:
            waits = [pool.submit(c.await_proof, j) for j in ids]
            time.sleep(0.2)
            proc.send_signal(signum)
            end = time.monotonic() + 30
            while True:  # new work is refused while draining
                try:
                    c.submit(request(1))
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.UNAVAILABLE
                    assert "shutting down" in e.details()
                    break
                assert time.monotonic() < end
                time.sleep(0.02)
            for r, w in zip(reqs, waits, strict=True):
                resp = w.result(timeout=60)
                assert resp.status == pb.AwaitProofResponse.COMPLETED
                assert verify(tmp_path, r, resp.proof)
        c.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (tmp_path / "cuzk.sock").exists()  # cleaned up on the way out


# --- one daemon per state (issue 15, item 1) ----------------------------------------------------
def start_second(home: Path, config: str, log_name: str) -> subprocess.Popen:
    """Another daemon process on ``config`` (a file under ``home``), its output kept apart."""
    cfg = home / f"{log_name}.toml"
    cfg.write_text(config)
    env = {**os.environ, "CUZK_HOME": str(home)}
    log = open(home / f"{log_name}.log", "wb")  # noqa: SIM115 (the daemon keeps it)
    return subprocess.Popen(
        [sys.executable, "-m", "cuzk.service.daemon_main", "--config", str(cfg)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@pytest.mark.parametrize("shared", ["journal and socket", "socket only"])
def test_a_second_daemon_never_takes_the_first_ones_state(tmp_path: Path, shared: str) -> None:
    first = start(tmp_path)
    try:
        c = client(tmp_path)
        reqs = [request(1) for _ in range(8)]
        ids = [c.submit(r).job_id for r in reqs]
        config = CONFIG.format(home=tmp_path)
        if shared == "socket only":  # its own journal, the same socket
            config = config.replace(
                "[daemon]\n", f'[daemon]\njournal = "{tmp_path}/other-journal.sqlite"\n'
            )
        second = start_second(tmp_path, config, "second")
        try:
            assert second.wait(timeout=60) == 2
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        said = (tmp_path / "second.log").read_text()
        if shared == "journal and socket":
            assert f"in use by another cuzk-daemon (pid {first.pid})" in said
        else:
            assert f"unix://{tmp_path}/cuzk.sock is live: another daemon (pid {first.pid})" in said
        assert "resumed" not in said
        # The first serves on, on its socket; every job is proven once, by it.
        assert (tmp_path / "cuzk.sock").exists()
        for r, job_id in zip(reqs, ids, strict=True):
            resp = c.await_proof(job_id, timeout_ms=120_000)
            assert resp.status == pb.AwaitProofResponse.COMPLETED
            assert verify(tmp_path, r, resp.proof)
        log = (tmp_path / "daemon.log").read_text()
        for job_id in ids:
            assert log.count(f"job {job_id} completed") == 1
        c.close()
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 0
