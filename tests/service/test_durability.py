"""Durability under SIGKILL (issue 15's acceptance): a daemon killed seven times while it
proves, and restarted each time, loses no accepted job and proves none twice; clients'
retries of the same request are answered by their job, never by a new one."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_daemon import verify

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.journal import Journal
from cuzk.engine.kinds import demo
from cuzk.service.client import Client
from cuzk.service.proto import proving_pb2 as pb

KILLS = 7
PER_ROUND = 24
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


def start(home: Path, run: int) -> subprocess.Popen:
    cfg = home / "cuzk.toml"
    cfg.write_text(CONFIG.format(home=home))
    log = open(home / f"daemon-{run}.log", "wb")  # noqa: SIM115 (the daemon keeps it)
    return subprocess.Popen(
        [sys.executable, "-m", "cuzk.service.daemon_main", "--config", str(cfg)],
        env={**os.environ, "CUZK_HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def connect(home: Path) -> Client:
    c = Client(f"unix://{home}/cuzk.sock")
    c.wait_ready(timeout=90)
    return c


def completed(c: Client, ids: list[str]) -> int:
    return sum(
        c.await_proof(j, timeout_ms=1).status == pb.AwaitProofResponse.COMPLETED for j in ids
    )


@pytest.mark.slow
def test_seven_sigkills_lose_nothing_and_prove_nothing_twice(tmp_path: Path) -> None:
    rng = random.Random(15)
    circuit = DemoCircuit(rounds=20, words=1)  # small: many proofs per round
    requests: dict[str, pb.SubmitProofRequest] = {}
    for run in range(KILLS):
        proc = start(tmp_path, run)
        try:
            c = connect(tmp_path)
            # clients retry what they sent before the crash: answered by the same job
            for rid in rng.sample(sorted(requests), min(5, len(requests))):
                assert c.submit(requests[rid]).job_id == rid
            new = []
            for i in range(PER_ROUND):
                rid = f"dur-{run}-{i}"
                requests[rid] = pb.SubmitProofRequest(
                    request_id=rid,
                    proof_kind=pb.CUZK_DEMO,
                    priority=rng.choice([pb.LOW, pb.NORMAL, pb.HIGH, pb.CRITICAL]),
                    vanilla_proof=demo.make_vanilla(circuit, rng.choice([1, 2])),
                )
                assert c.submit(requests[rid]).job_id == rid
                new.append(rid)
            # kill once some of this round's work is done and some is not
            end = time.monotonic() + 120
            while completed(c, new) < rng.randint(1, PER_ROUND // 2):
                assert time.monotonic() < end, "no progress"
                time.sleep(0.02)
            # and one accepted just before the kill: journalled before its answer,
            # so every restart has unfinished work however fast the round went
            rid = f"dur-{run}-last"
            requests[rid] = pb.SubmitProofRequest(
                request_id=rid,
                proof_kind=pb.CUZK_DEMO,
                priority=pb.LOW,
                vanilla_proof=demo.make_vanilla(circuit, 3),
            )
            assert c.submit(requests[rid]).job_id == rid
            c.close()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

    proc = start(tmp_path, KILLS)
    try:
        c = connect(tmp_path)
        for rid, req in requests.items():
            resp = c.await_proof(rid, timeout_ms=300_000)
            assert resp.status == pb.AwaitProofResponse.COMPLETED, (rid, resp.error_message)
            assert verify(tmp_path, req, resp.proof), rid
        status = c.status()
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert not status.queues or all(q.pending == q.in_progress == 0 for q in status.queues)
    # nothing duplicated: one job per request, no "#2" attempt, each completed once
    (journal,) = (tmp_path / "daemons").glob("*/journal.sqlite")  # its listen address's
    records = Journal(journal).records()
    assert sorted(r.job_id for r in records) == sorted(requests)
    logs = "".join((tmp_path / f"daemon-{i}.log").read_text() for i in range(KILLS + 1))
    for rid in requests:
        assert logs.count(f"job {rid} completed") <= 1, rid
    assert logs.count("unfinished job(s) resumed") == KILLS  # every restart after a kill
