"""Client identities (issue 32, item 5): a token file of named entries gives each client
its own jobs and request ids; an admin entry and the unix socket see every job; a file of
one token behaves as before."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from daemon_harness import running_daemon

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobNotFound, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.errors import InputError
from cuzk.service.client import Client
from cuzk.service.identity import ANONYMOUS, Identity, parse_tokens

ALICE, BOB, OPS = "a" * 20 + "lice", "b" * 20 + "ob", "o" * 20 + "ps"
BODY = demo.make_vanilla(DemoCircuit(rounds=20, words=1), 1)
WAIT = {"max_batch_size": 64, "max_batch_wait_ms": 600_000}  # jobs stay queued


def test_one_token_is_the_anonymous_admin_as_before() -> None:
    tokens = parse_tokens("x" * 32 + "\n")
    assert not tokens.named
    assert tokens.match("Bearer " + "x" * 32) == ANONYMOUS
    assert tokens.match("Bearer " + "y" * 32) is None
    assert tokens.match(None) is None and tokens.match("Basic " + "x" * 32) is None


def test_named_entries() -> None:
    tokens = parse_tokens(
        f"# clients\ncurio-a {ALICE}\n\ncurio-b {BOB}   # the second\nops {OPS} admin\n"
    )
    assert tokens.named
    assert tokens.match(f"Bearer {ALICE}") == Identity("curio-a")
    assert tokens.match(f"bearer {BOB}") == Identity("curio-b")
    assert tokens.match(f"Bearer {OPS}") == Identity("ops", admin=True)
    assert tokens.match(f"Bearer {OPS}").sees is None and Identity("x").sees == "x"
    for text, message in [
        (f"a {ALICE}\nb {ALICE}", "line 2: the same token as an earlier entry"),
        (f"a {ALICE}\na {BOB}", "line 2: a is named twice"),
        ("a short", "line 1: the token must be at least 16"),
        (f"a {ALICE} root", "line 1: expected: NAME TOKEN, or NAME TOKEN admin"),
        (f"a/b {ALICE}", "line 1: 'a/b' is not a name"),
        ("# nothing\n", "holds no token"),
        ("short", "the token must be at least 16 characters"),
    ]:
        with pytest.raises(InputError, match=message):
            parse_tokens(text)


def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"curio-a {ALICE}\ncurio-b {BOB}\nops {OPS} admin\n")
    path.chmod(0o600)
    return path


def test_a_client_sees_and_cancels_its_own_jobs_only(tmp_path: Path) -> None:
    with running_daemon(
        tmp_path,
        daemon={
            "listen": ["127.0.0.1:0", f"unix://{tmp_path}/cuzk.sock"],
            "auth_token_file": str(token_file(tmp_path)),
        },
        scheduler=WAIT,
    ) as d:
        alice, bob = d.client(token=ALICE), d.client(token=BOB)
        ops, local = d.client(token=OPS), d.client(1)
        req = ProofRequest(ProofKind.DEMO, request_id="porep-1", vanilla_proof=BODY)
        a = alice.submit(req).job_id
        b = bob.submit(req).job_id  # the same request id: bob's own job
        assert (a, b) == ("curio-a/porep-1", "curio-b/porep-1")
        assert alice.submit(req).job_id == a  # a retry is answered by alice's job
        for call in (lambda: bob.await_proof(a, timeout_ms=10), lambda: bob.cancel(a)):
            with pytest.raises(grpc.RpcError) as ei:
                call()
            assert ei.value.code() == grpc.StatusCode.NOT_FOUND
        assert "still queued" in alice.await_proof(a, timeout_ms=10).error_message  # hers
        alice.cancel(a)
        assert d.engine.registry.get(a).cancelled
        ops.cancel(b)  # an admin cancels any job, and so does the unix socket
        assert d.engine.registry.get(b).cancelled
        c = local.submit(ProofRequest(ProofKind.DEMO, request_id="x", vanilla_proof=BODY)).job_id
        assert c == "x"  # the unix socket's calls are the anonymous admin's
        with pytest.raises(grpc.RpcError) as ei:
            bob.cancel(c)
        assert ei.value.code() == grpc.StatusCode.NOT_FOUND
        local.cancel(c)
        with pytest.raises(grpc.RpcError) as ei:
            Client(d.servers.bound[0], token="z" * 32).status()
        assert ei.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_one_token_keeps_jobs_shared_as_before(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(ALICE + "\n")
    path.chmod(0o600)
    with running_daemon(
        tmp_path, daemon={"listen": ["127.0.0.1:0"], "auth_token_file": str(path)}, scheduler=WAIT
    ) as d:
        one, two = d.client(token=ALICE), d.client(token=ALICE)
        job = one.submit(ProofRequest(ProofKind.DEMO, request_id="r", vanilla_proof=BODY)).job_id
        assert job == "r"
        two.cancel(job)
        assert d.engine.registry.get(job).cancelled


def test_a_jobs_client_survives_a_restart(tmp_path: Path) -> None:
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
        scheduler=WAIT,
    )
    e = Engine(cfg)
    e.start()
    try:
        job = e.submit(ProofRequest(ProofKind.DEMO, request_id="r", vanilla_proof=BODY), "alice")
    finally:
        e.stop()
    e = Engine(cfg)
    e.start()
    try:
        assert e.registry.get(job.job_id, "alice").client == "alice"
        with pytest.raises(JobNotFound):
            e.registry.get(job.job_id, "bob")
        with pytest.raises(JobNotFound):
            e.cancel(job.job_id, "bob")
    finally:
        e.stop()
