"""The gRPC service end to end, in process: load, priorities, budgets, faults, bad input, auth."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from daemon_harness import running_daemon

from cuzk.algebra.fields import R
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.jobs import JobState, Priority, ProofKind
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import key_host_bytes
from cuzk.groth16 import verifier
from cuzk.groth16.proof import decode_proofs
from cuzk.service.client import Client
from cuzk.service.proto import proving_pb2 as pb

SMALL = DemoCircuit(rounds=40, words=1)  # ~210 constraints: fast proofs on the CPU
COMPLETED = pb.AwaitProofResponse.COMPLETED


def demo_request(
    circuit: DemoCircuit = SMALL, partitions: int = 1, priority: int = 0, request_id: str = ""
) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(
        request_id=request_id,
        proof_kind=pb.CUZK_DEMO,
        priority=priority,
        vanilla_proof=demo.make_vanilla(circuit, partitions),
    )


def check_proof(engine, request: pb.SubmitProofRequest, proof: bytes) -> None:
    """Verify a returned proof independently, from the request's own instances."""
    body = json.loads(request.vanilla_proof)
    circuit = DemoCircuit(rounds=body["rounds"], words=body["words"])
    vk = engine.keys.verifying_key(demo.circuit_id(circuit.rounds, circuit.words))
    proofs = decode_proofs(proof)
    assert len(proofs) == len(body["instances"])
    for inst, p in zip(body["instances"], proofs, strict=True):
        x = int(inst["x"])
        out = circuit.evaluate(x, [int(s) for s in inst["secrets"]])
        assert verifier.verify(vk, [x, out], p)
        assert not verifier.verify(vk, [x, (out + 1) % R], p)


def rpc_error(fn, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as ei:
        fn(*args)
    return ei.value


# --- load ------------------------------------------------------------------------------
@pytest.mark.slow
def test_four_clients_25_mixed_priority_proofs_each(tmp_path: Path) -> None:
    cid = demo.circuit_id(SMALL.rounds, SMALL.words)
    kind = demo.DemoKind()
    working = kind.working_bytes(cid)
    key = key_host_bytes(kind.r1cs(cid))
    # Room for the key and about two partitions: the budget binds, work must wait.
    budget = key + 2 * working + working // 2
    prios = [pb.LOW, pb.NORMAL, pb.NORMAL, pb.HIGH, pb.CRITICAL]
    with running_daemon(
        tmp_path,
        memory={"total_budget": str(budget)},
        gpus={"gpu_workers_per_device": 2},
        pipeline={"synthesis_concurrency": 1, "synthesis_lookahead": 2},
        scheduler={"max_batch_size": 2, "max_batch_wait_ms": 150},
    ) as d:
        engine = d.engine
        results: dict[str, tuple[pb.SubmitProofRequest, pb.AwaitProofResponse]] = {}
        errors: list[BaseException] = []
        lock = threading.Lock()
        start = threading.Barrier(4)

        def client_run(ci: int) -> None:
            try:
                with d.client() as c:
                    # CRITICAL jobs have two partitions, the others one: a partition
                    # queued behind a CRITICAL job cannot finish before both of its
                    # (which start together on the two workers).
                    reqs = []
                    for j in range(25):
                        p = prios[(ci + j) % 5]
                        reqs.append(
                            demo_request(partitions=2 if p == pb.CRITICAL else 1, priority=p)
                        )
                    start.wait()
                    ids = [c.submit(r).job_id for r in reqs]
                    for r, job_id in zip(reqs, ids, strict=True):
                        resp = c.await_proof(job_id)
                        with lock:
                            results[job_id] = (r, resp)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=client_run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        assert len(results) == 100
        for job_id, (req, resp) in results.items():
            assert resp.status == COMPLETED, (job_id, resp.error_message)
            assert len(resp.proof) == (2 if req.priority == pb.CRITICAL else 1) * 192
            check_proof(engine, req, resp.proof)

        # CRITICAL jobs finish ahead of lower-priority jobs still queued when they arrived.
        jobs = [engine.registry.get(j) for j in results]
        critical = [j for j in jobs if j.priority == Priority.CRITICAL]
        lower = [j for j in jobs if j.priority < Priority.HIGH]
        overtaken = 0
        for c in critical:
            for n in lower:
                if n.started_at is not None and n.started_at <= c.submitted_at:
                    continue  # already running when c arrived
                assert c.finished_at <= n.finished_at, (c.job_id, n.job_id)
                overtaken += 1
        assert overtaken > 0

        # Memory: never above the budget, and the budget did make work wait.
        snap = engine.host_budget.snapshot()
        assert snap["peak_bytes"] <= snap["limit_bytes"] == budget
        assert snap["waits"] > 0
        st = d.client().status()
        assert st.total_proofs_completed == 100 and st.total_proofs_failed == 0
        assert st.pinned_memory_limit_bytes == budget
        metrics = d.client().metrics()
        assert "\ncuzk_proofs_completed_total 100.0\n" in metrics
        assert '\ncuzk_proofs_completed{proof_kind="demo"} 100\n' in metrics
        assert 'cuzk_partitions_proven_total{proof_kind="demo"} 120.0' in metrics


def test_prove_and_status(daemon) -> None:
    c = daemon.client()
    req = demo_request(partitions=3)
    resp = c.prove(req)
    assert resp.status == COMPLETED and resp.error_message == ""
    assert len(resp.proof) == 3 * 192
    assert resp.total_ms >= resp.gpu_compute_ms > 0
    check_proof(daemon.engine, req, resp.proof)
    st = c.status()
    assert st.total_proofs_completed == 1
    assert st.uptime_seconds >= 0
    assert [g.name for g in st.gpus] == ["cpu"]
    (srs,) = st.loaded_srs
    assert srs.circuit_id == demo.circuit_id(SMALL.rounds, SMALL.words)
    assert srs.tier == pb.SRSStatus.HOT and srs.size_bytes > 0 and srs.ref_count == 0


def test_request_id_as_curio_uses_it(daemon) -> None:
    c = daemon.client()
    req = demo_request(request_id="sector-17")
    a = c.submit(req)
    b = c.submit(req)
    assert a.job_id == b.job_id == "sector-17"
    first = c.await_proof("sector-17")
    assert first.status == COMPLETED
    # An identical request after completion: the same job and proof, not a new proof.
    again = c.prove(req)
    assert again.job_id == "sector-17" and again.proof == first.proof
    assert c.status().total_proofs_completed == 1
    # The same id with other content (Curio's WindowPoSt partitions): another job.
    other = demo_request(request_id="sector-17")  # a new random instance
    r = c.prove(other)
    assert r.status == COMPLETED and r.job_id == "sector-17#2"
    check_proof(daemon.engine, other, r.proof)
    # A retry after CANCELLED is a new attempt, proven.
    big = demo_request(DemoCircuit.with_constraints(1200), partitions=4, request_id="p-9")
    c.submit(big)
    c.cancel("p-9")
    assert c.await_proof("p-9").status == pb.AwaitProofResponse.CANCELLED
    retry = c.prove(big)
    assert retry.status == COMPLETED and retry.job_id == "p-9#2"
    check_proof(daemon.engine, big, retry.proof)
    assert c.await_proof("p-9").status == pb.AwaitProofResponse.CANCELLED  # kept, by its id


def test_await_timeout_and_unknown_job(daemon) -> None:
    c = daemon.client()
    big = DemoCircuit.with_constraints(1200)
    job = c.submit(demo_request(big, partitions=2)).job_id
    r = c.await_proof(job, timeout_ms=50)
    assert r.status == pb.AwaitProofResponse.TIMEOUT
    assert c.await_proof(job).status == COMPLETED
    e = rpc_error(c.await_proof, "no-such-job")
    assert e.code() == grpc.StatusCode.NOT_FOUND


# --- cancel and evict ---------------------------------------------------------------------
def _wait_running(engine, job_id: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while engine.registry.get(job_id).state != JobState.RUNNING:
        assert time.monotonic() < end, "job never started"
        time.sleep(0.01)


def test_cancel_queued_and_running(daemon) -> None:
    c = daemon.client()
    big = DemoCircuit.with_constraints(1200)
    running = c.submit(demo_request(big, partitions=8)).job_id
    _wait_running(daemon.engine, running)
    queued = c.submit(demo_request(big, partitions=2)).job_id
    assert daemon.engine.registry.get(queued).state == JobState.QUEUED
    end = time.monotonic() + 30
    while not daemon.engine.registry.get(running).partition_proofs:  # well under way
        assert time.monotonic() < end
        time.sleep(0.01)
    assert c.cancel(queued).was_running is False
    assert c.cancel(running).was_running is True
    for job_id in (queued, running):
        r = c.await_proof(job_id)
        assert r.status == pb.AwaitProofResponse.CANCELLED and r.proof == b""
    job = daemon.engine.registry.get(running)
    assert len(job.partition_proofs) < 8  # stopped at a partition boundary
    assert c.cancel(running).was_running is False  # already finished: nothing to do
    # What the cancelled partitions held comes back; then the daemon still proves.
    end = time.monotonic() + 30
    while any(s.ref_count for s in daemon.engine.keys.status()):
        assert time.monotonic() < end
        time.sleep(0.05)
    assert c.prove(demo_request()).status == COMPLETED


def test_evict_refused_in_use_then_done(daemon) -> None:
    c = daemon.client()
    big = DemoCircuit.with_constraints(1200)
    cid = demo.circuit_id(big.rounds, big.words)
    job = c.submit(demo_request(big, partitions=4)).job_id
    _wait_running(daemon.engine, job)
    end = time.monotonic() + 30
    while not any(s.ref_count for s in daemon.engine.keys.status()):
        assert time.monotonic() < end
        time.sleep(0.01)
    e = rpc_error(c.evict, cid)
    assert e.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "in use" in e.details()
    assert c.await_proof(job).status == COMPLETED
    r = c.evict(cid)
    assert r.was_loaded and r.freed_bytes > 0
    (s,) = [s for s in c.status().loaded_srs if s.circuit_id == cid]
    assert s.tier == pb.SRSStatus.WARM
    r2 = c.evict(cid)
    assert not r2.was_loaded and r2.freed_bytes == 0
    (s,) = [s for s in c.status().loaded_srs if s.circuit_id == cid]
    assert s.tier == pb.SRSStatus.COLD
    # Preload brings it back; a second preload finds it hot.
    assert c.preload(cid).already_loaded is False
    assert c.preload(cid).already_loaded is True
    (s,) = [s for s in c.status().loaded_srs if s.circuit_id == cid]
    assert s.tier == pb.SRSStatus.HOT
    e = rpc_error(c.preload, "porep-3g")
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    # A Filecoin circuit without parameters in the cache (and no dev keys allowed):
    e = rpc_error(c.preload, "porep-32g")
    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "no parameters for porep-32g: v28-stacked-proof-of-replication" in e.details()
    assert "generate_dev_keys" in e.details()


# --- bad input ------------------------------------------------------------------------------
def _c1(sector_size: int = 2048, phase1: object = None, raw_phase1: str | None = None) -> bytes:
    inner = (
        phase1
        if phase1 is not None
        else {
            "registered_proof": "StackedDrg2KiBV1_1",
            "vanilla_proofs": {},
            "comm_r": [0] * 32,
            "comm_d": [0] * 32,
            "replica_id": [0] * 32,
            "seed": [0] * 32,
            "ticket": [0] * 32,
        }
    )
    b64 = raw_phase1 if raw_phase1 is not None else base64.b64encode(json.dumps(inner).encode())
    b64 = b64 if isinstance(b64, str) else b64.decode()
    return json.dumps({"SectorNum": 1, "Phase1Out": b64, "SectorSize": sector_size}).encode()


BAD_INPUTS = [
    (
        "malformed c1.json",
        pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=b'{"SectorNum": 1,'),
        grpc.StatusCode.INVALID_ARGUMENT,
        "c1.json: not valid JSON",
    ),
    (
        "c1.json without Phase1Out",
        pb.SubmitProofRequest(
            proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=b'{"SectorNum": 1, "SectorSize": 2048}'
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "c1.json: Phase1Out: is missing",
    ),
    (
        "malformed base64",
        pb.SubmitProofRequest(
            proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=_c1(raw_phase1="eyJh*GVsbG8=")
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Phase1Out: not valid base64: character '*' at offset 4",
    ),
    (
        "not a sector size",
        pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=_c1(12345)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "SectorSize: 12345 is not a Filecoin sector size",
    ),
    (
        "registered_proof for another size",
        pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=_c1(8 << 20)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "StackedDrg2KiBV1_1 is for 2KiB sectors but SectorSize is 8MiB",
    ),
    (
        "unknown proof kind",
        pb.SubmitProofRequest(proof_kind=7, vanilla_proof=b"{}"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "proof_kind: unknown value 7",
    ),
    (
        "unspecified proof kind",
        pb.SubmitProofRequest(vanilla_proof=b"{}"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "proof_kind: is unspecified",
    ),
    (
        "valid c1.json envelope, C1 output without vanilla proofs",
        pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=_c1()),
        grpc.StatusCode.INVALID_ARGUMENT,
        "c1.json: Phase1Out: vanilla_proofs: expected one variant (StackedDrg2KiBV1)",
    ),
    (
        "SnapDeals partition count",
        pb.SubmitProofRequest(
            proof_kind=pb.SNAP_DEALS_UPDATE,
            sector_size=32 << 30,
            vanilla_proofs=[b"p"],
            comm_r_old=bytes(32),
            comm_r_new=bytes(32),
            comm_d_new=bytes(32),
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "snap request: vanilla_proofs: 1 given, a 32GiB SnapDeals proof has 16 partition(s)",
    ),
    (
        "PoSt randomness of the wrong length",
        pb.SubmitProofRequest(
            proof_kind=pb.WINNING_POST, vanilla_proofs=[b"x"], randomness=b"\x00" * 31
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "randomness: is 31 bytes, expected 32",
    ),
    (
        "bad demo body",
        pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, vanilla_proof=b'{"rounds": 0}'),
        grpc.StatusCode.INVALID_ARGUMENT,
        "demo vanilla proof: rounds: 0 is out of range",
    ),
    (
        "unknown priority",
        pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, priority=9),
        grpc.StatusCode.INVALID_ARGUMENT,
        "priority: unknown value 9",
    ),
]


def test_bad_inputs_are_answered_clearly_while_other_jobs_run(tmp_path: Path) -> None:
    with running_daemon(tmp_path, daemon={"max_message_size": 1 << 20}) as d:
        c = d.client()
        big = DemoCircuit.with_constraints(1200)
        good = demo_request(big, partitions=3)
        job = c.submit(good).job_id
        for name, req, code, text in BAD_INPUTS:
            e = rpc_error(c.submit, req)
            assert e.code() == code, name
            assert text in e.details(), (name, e.details())
        # Oversized: more than max_message_size is refused by gRPC itself.
        huge = pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, vanilla_proof=b"x" * (2 << 20))
        e = rpc_error(c.submit, huge)
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in e.details()
        # not failed by the bad requests (with the native CPU kernels it may
        # already be done: a 1,200-constraint proof takes a few hundred ms)
        assert d.engine.registry.get(job).state in (
            JobState.QUEUED,
            JobState.RUNNING,
            JobState.COMPLETED,
        )
        r = c.await_proof(job)
        assert r.status == COMPLETED
        check_proof(d.engine, good, r.proof)
        assert d.engine.totals[JobState.COMPLETED] == 1  # nothing bad was accepted
        assert len(d.engine.registry.all()) == 1


# --- access: TCP with a bearer token, TLS, HTTP ----------------------------------------------
def test_tcp_requires_the_bearer_token(tmp_path: Path) -> None:
    token = "s3cret-token-for-tests-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    with running_daemon(
        tmp_path,
        daemon={
            "listen": [f"unix://{tmp_path}/cuzk.sock", "127.0.0.1:0"],
            "auth_token_file": str(tmp_path / "token"),
            "status_listen": "",
        },
    ) as d:
        tcp = d.servers.bound[1]
        assert tcp.startswith("127.0.0.1:")
        with Client(tcp, token="") as none:
            e = rpc_error(none.status)
            assert e.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "missing bearer token" in e.details()
        with Client(tcp, token="wrong-token-wrong-token") as wrong:
            e = rpc_error(wrong.submit, demo_request())
            assert e.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "does not match" in e.details()
        with Client(tcp, token_file=str(tmp_path / "token")) as ok:
            req = demo_request()
            r = ok.prove(req)
            assert r.status == COMPLETED
            check_proof(d.engine, req, r.proof)
        # The unix socket needs no token: its file permissions guard it.
        assert d.client(0).status().total_proofs_completed == 1
        assert len(d.engine.registry.all()) == 1  # the refused submit never reached the engine


def test_unreachable_tcp_without_a_token_serves_loopback_peers_only(tmp_path: Path, caplog) -> None:
    """Curio's cuzk.example.toml (0.0.0.0, no token): the daemon starts, serves Curio
    on this host, and answers another host UNAUTHENTICATED naming the line to add.
    The other host is this machine's own non-loopback address: its peer address is
    what another machine's would be (127.0.0.0/8 is this machine, all of it)."""
    import logging

    from netaddr import non_loopback_ip

    other_host = non_loopback_ip()
    with (
        caplog.at_level(logging.WARNING, logger="cuzk.service.server"),
        running_daemon(tmp_path, daemon={"listen": ["0.0.0.0:0"]}) as d,
    ):
        port = d.servers.bound[0].rpartition(":")[2]
        with Client(f"127.0.0.1:{port}", token="") as local:
            r = local.prove(demo_request())
            assert r.status == COMPLETED
        with Client(f"{other_host}:{port}", token="") as remote:
            for call in (remote.status, lambda: remote.submit(demo_request())):
                e = rpc_error(call)
                assert e.code() == grpc.StatusCode.UNAUTHENTICATED
                assert "serves loopback peers only" in e.details()
                assert 'auth_token_file = "/path/to/token"' in e.details()
                assert "allow_insecure_tcp = true" in e.details()
        assert len(d.engine.registry.all()) == 1  # the refused submit never reached it
        (warning,) = [r for r in caplog.records if "loopback peers only" in r.getMessage()]
        assert warning.levelno == logging.WARNING
        assert "0.0.0.0:0 is reachable from other machines" in warning.getMessage()


def test_a_loopback_only_status_listener_refuses_other_hosts(tmp_path: Path) -> None:
    from netaddr import non_loopback_ip

    from cuzk.service.http import StatusServer

    other_host = non_loopback_ip()
    with running_daemon(tmp_path) as d:
        http = StatusServer(d.engine, "0.0.0.0:0", loopback_only="refused: add one line")
        http.start()
        try:
            port = http.address.rpartition(":")[2]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status") as r:
                assert "totals" in json.load(r)
            with pytest.raises(urllib.error.HTTPError) as ei:
                urllib.request.urlopen(f"http://{other_host}:{port}/status")
            assert ei.value.code == 401
            assert ei.value.read() == b"refused: add one line\n"
        finally:
            http.stop()


@pytest.mark.parametrize(
    ("peer", "loopback"),
    [
        ("ipv4:127.0.0.1:5000", True),
        ("ipv4:127.0.0.2:5000", True),  # 127.0.0.0/8 is this machine
        ("ipv6:[::1]:5000", True),
        ("ipv6:%5B::1%5D:5000", True),
        ("ipv6:[::ffff:127.0.0.1]:5000", True),  # a dual-stack listener's IPv4 peer
        ("unix:/run/curio/cuzk.sock", True),
        ("ipv4:192.0.2.2:5000", False),
        ("ipv6:[fd00::2]:5000", False),
        ("ipv6:[::ffff:192.0.2.2]:5000", False),
        ("ipv4:not-an-ip:1", False),
        ("", False),
    ],
)
def test_which_peers_are_loopback(peer: str, loopback: bool) -> None:
    from cuzk.service.server import is_loopback_peer

    assert is_loopback_peer(peer) is loopback


@pytest.mark.parametrize(
    ("listen", "insecure", "verdict"),
    [
        ("127.0.0.1:9820", False, "loopback"),
        ("127.8.9.10:9820", False, "loopback"),
        ("[::1]:9820", False, "loopback"),
        ("localhost:9820", False, "loopback"),
        ("0.0.0.0:9820", False, "loopback peers only"),
        ("[::]:9820", False, "loopback peers only"),
        ("192.168.1.5:9820", False, "loopback peers only"),
        ("prover.internal:9820", False, "loopback peers only"),  # a name may resolve anywhere
        ("0.0.0.0:9820", True, "INSECURE"),
        ("unix:///run/curio/cuzk.sock", False, None),
    ],
)
def test_plain_tcp_access_rules(listen: str, insecure: bool, verdict: str | None) -> None:
    from cuzk.engine.config import DaemonConfig
    from cuzk.service.server import check_tcp_access, loopback_only, parse_address

    d = DaemonConfig(listen=(listen,), allow_insecure_tcp=insecure)
    addr = parse_address(listen)
    assert loopback_only(d, addr) is (verdict == "loopback peers only")
    if verdict == "loopback peers only":
        warning = check_tcp_access(d, addr, "listen", "cuzk.toml")
        # The warning names the one line to add, either way.
        assert warning is not None and warning.startswith(f"cuzk.toml: [daemon] listen {addr} ")
        assert 'auth_token_file = "/path/to/token"' in warning
        assert "allow_insecure_tcp = true" in warning
    elif verdict is None:
        assert check_tcp_access(d, addr) is None
    else:
        warning = check_tcp_access(d, addr)
        assert warning is not None and verdict in warning
    # With a token every TCP address is served to every peer, and no warning is due.
    tokened = DaemonConfig(listen=(listen,), auth_token_file="/t")
    assert check_tcp_access(tokened, addr) is None
    assert not loopback_only(tokened, addr)


def test_loopback_tcp_without_a_token_serves_curios_client(tmp_path: Path, caplog) -> None:
    import logging

    with (
        caplog.at_level(logging.WARNING, logger="cuzk.service.server"),
        running_daemon(tmp_path, daemon={"listen": ["127.0.0.1:0"]}) as d,
    ):
        with Client(d.servers.bound[0], token="") as c:  # no credentials, as Curio's
            req = demo_request()
            r = c.prove(req)
            assert r.status == COMPLETED
            check_proof(d.engine, req, r.proof)
        assert "plain TCP without a bearer token on loopback" in caplog.text


def test_allow_insecure_tcp_serves_any_address_loudly(tmp_path: Path, caplog) -> None:
    import logging

    with (
        caplog.at_level(logging.WARNING, logger="cuzk.service.server"),
        running_daemon(tmp_path, daemon={"listen": ["0.0.0.0:0"], "allow_insecure_tcp": True}) as d,
    ):
        port = d.servers.bound[0].rpartition(":")[2]
        with Client(f"127.0.0.1:{port}", token="") as c:
            assert c.status().total_proofs_completed == 0
        (record,) = [r for r in caplog.records if "INSECURE" in r.getMessage()]
        assert record.levelno == logging.WARNING
        assert "0.0.0.0:0" in record.getMessage()


def test_tls_and_http_status(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    token = "tls-token-0123456789abcdef"
    (tmp_path / "token").write_text(token)
    with running_daemon(
        tmp_path,
        daemon={
            "listen": ["127.0.0.1:0"],
            "auth_token_file": str(tmp_path / "token"),
            "tls_cert_file": str(cert),
            "tls_key_file": str(key),
        },
    ) as d:
        addr = d.servers.bound[0]
        with Client(addr, token=token, tls_ca_file=str(cert)) as c:
            assert c.prove(demo_request()).status == COMPLETED
        with Client(addr, token=token, tls=False) as plain:  # plaintext to a TLS port fails
            e = rpc_error(plain.status)
            assert e.code() == grpc.StatusCode.UNAVAILABLE

        from cuzk.service.http import StatusServer

        http = StatusServer(d.engine, "127.0.0.1:0", token)
        http.start()
        try:
            base = f"http://{http.address}"
            with pytest.raises(urllib.error.HTTPError) as ei:
                urllib.request.urlopen(base + "/status")
            assert ei.value.code == 401
            auth = {"Authorization": f"Bearer {token}"}
            with urllib.request.urlopen(
                urllib.request.Request(base + "/status", headers=auth)
            ) as r:
                status = json.load(r)
            assert status["totals"]["completed"] == 1
            assert "demo" in status["kinds"]
            host = status["budgets"]["host"]
            assert host["peak_bytes"] <= host["limit_bytes"]
            req = urllib.request.Request(base + "/metrics", headers=auth)
            with urllib.request.urlopen(req) as r:
                text = r.read().decode()
                assert r.headers["Content-Type"].startswith("text/plain")
            assert "cuzk_stage_duration_seconds_bucket" in text
            assert 'cuzk_proofs_total{proof_kind="demo",status="completed"} 1.0' in text
            assert 'cuzk_memory_budget_bytes{budget="host"}' in text
        finally:
            http.stop()


def test_kinds_enum_matches_bench_names() -> None:
    # The bench's -t names and the status' proof_kind labels are one vocabulary.
    from cuzk.cli.bench_service import TYPES

    for label in ("porep", "snap", "wpost", "winning", "demo"):
        assert TYPES[label].label == label
        assert ProofKind.from_label(label) == TYPES[label]


def test_the_status_endpoint_follows_the_same_rule() -> None:
    from cuzk.engine.config import DaemonConfig
    from cuzk.service.server import check_access

    unix = ("unix:///run/curio/cuzk.sock",)
    warnings = check_access(DaemonConfig(listen=unix, status_listen="127.0.0.1:9821"))
    assert len(warnings) == 1 and "[daemon] status_listen 127.0.0.1:9821" in warnings[0]
    (warning,) = check_access(DaemonConfig(listen=unix, status_listen="0.0.0.0:9821"))
    assert "[daemon] status_listen 0.0.0.0:9821 is reachable" in warning
    assert "loopback peers only" in warning
    assert (
        check_access(DaemonConfig(listen=unix, status_listen="0.0.0.0:9821", auth_token_file="t"))
        == []
    )


CURIO_STATUS_KEYS = {
    "uptime_secs",
    "memory",
    "synthesis",
    "pipelines",
    "gpu_workers",
    "allocations",
    "counters",
}


def test_curios_status_keys_over_http_on_loopback(tmp_path: Path) -> None:
    from cuzk.service.http import StatusServer

    with running_daemon(
        tmp_path,
        # Curio's 0: its default (18), so the three synthesis workers asked for run.
        pipeline={"synthesis_concurrency": 3, "max_parallel_synthesis": 0},
        gpus={"gpu_workers_per_device": 2},
    ) as d:
        c = d.client()
        req = demo_request(partitions=2, request_id="porep-1000-7")
        assert c.prove(req).status == COMPLETED
        http = StatusServer(d.engine, "127.0.0.1:0", None)  # loopback: no token needed
        http.start()
        try:
            with urllib.request.urlopen(f"http://{http.address}/status") as r:
                status = json.load(r)
        finally:
            http.stop()
    assert set(status) >= CURIO_STATUS_KEYS | {"budgets", "queues", "totals"}
    assert status["uptime_secs"] >= 0
    mem = status["memory"]
    assert mem["total_bytes"] == 2 << 30
    assert mem["used_bytes"] + mem["available_bytes"] == mem["total_bytes"]
    assert status["synthesis"] == {"max_concurrent": 3, "active": 0}
    assert status["counters"] == {
        "total_completed": 1,
        "total_failed": 0,
        "completed_by_kind": {"demo": 1},
        "failed_by_kind": {},
        "queue_depth": 0,
    }
    assert [(w["worker_id"], w["gpu_ordinal"], w["state"]) for w in status["gpu_workers"]] == [
        (0, 0, "idle"),
        (1, 0, "idle"),
    ]
    assert all(w["current_job"] is None and w["busy_secs"] is None for w in status["gpu_workers"])
    (job,) = status["pipelines"]  # finished less than 30 s ago: still listed, as in Curio
    assert job["job_id"] == "porep-1000-7" and job["proof_kind"] == "demo"
    assert job["total_partitions"] == job["partitions_done"] == 2
    for i, part in enumerate(job["partitions"]):
        assert part["index"] == i and part["state"] == "done"
        assert part["synth_ms"] >= 0 and part["gpu_ms"] >= 0
    (srs,) = status["allocations"]["srs"]
    assert srs["bytes"] > 0 and srs["evictable"] is True
    assert status["allocations"]["pce"] == []


def test_get_status_speaks_curios_kind_names_and_the_devices_free_memory(tmp_path: Path) -> None:
    """Issue 31 item 5: queue kinds as Curio's daemon names them; a GPU's free figure
    is its driver's (what nvidia-smi shows), not what the budget has left."""
    from dataclasses import replace

    from cuzk.engine.status import QueueStatus
    from cuzk.service.convert import status_to_pb

    with running_daemon(tmp_path) as d:
        s = d.engine.status()
    kinds = ["porep", "snap", "wpost", "winning", "demo"]
    s = replace(
        s,
        queues=tuple(QueueStatus(k, 2, 1) for k in kinds),
        devices=(
            replace(s.devices[0], current_jobs=(("w-1", "wpost"),), memory_free=12345),
            replace(s.devices[0], ordinal=1, current_jobs=(), memory_free=None),
        ),
    )
    m = status_to_pb(s)
    assert [q.proof_kind for q in m.queues] == [
        "porep-c2",
        "snap-update",
        "window-post",
        "winning-post",
        "demo",
    ]
    assert m.gpus[0].vram_free_bytes == 12345 and m.gpus[0].current_proof_kind == "window-post"
    # The CPU device (no driver figure) reports the host budget it proves within.
    assert m.gpus[1].vram_free_bytes == max(0, s.devices[0].budget_free)
    assert m.gpus[1].current_proof_kind == ""


@pytest.mark.gpu
def test_get_status_reports_the_gpus_free_memory_on_the_gpu(tmp_path: Path) -> None:
    import cupy

    with running_daemon(tmp_path, gpus={"backend": "cuda", "vram_budget": "8GiB"}) as d:
        (g, *_) = d.client().status().gpus
        with cupy.cuda.Device(g.ordinal):
            free, total = cupy.cuda.runtime.memGetInfo()
        assert g.vram_total_bytes == total
        assert abs(g.vram_free_bytes - free) < 2 << 30  # within what another process may take
        assert g.vram_free_bytes > 8 << 30  # not the 8 GiB budget's free figure
