"""PoSt through the engine: WindowPoSt 2KiB end to end, and its request checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cuzk.circuits.post.circuit import public_inputs
from cuzk.circuits.post.config import WINDOW, config_for_registered_proof
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import read_sector_proof, write_sector_proof
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds.post import PoStKind
from cuzk.errors import InputError
from cuzk.groth16 import verifier
from cuzk.groth16.proof import Proof

RND = bytes(range(32))
WINDOW_2K_V1_1 = 10  # RegisteredPoStProof StackedDrgWindow2KiBV1_1
WINNING_2K = 0  # RegisteredPoStProof StackedDrgWinning2KiBV1


def window_request(randomness: bytes = RND, partition: int = 0) -> ProofRequest:
    cfg = config_for_registered_proof(WINDOW_2K_V1_1)
    base = partition * cfg.sector_count
    proofs = [generate_sector_proof(cfg, RND, 100 + i, base + i) for i in range(2)]
    return ProofRequest(
        ProofKind.WINDOW_POST_PARTITION,
        registered_proof=WINDOW_2K_V1_1,
        vanilla_proofs=tuple(write_sector_proof(p) for p in proofs),
        randomness=randomness,
        partition_index=partition,
    )


def test_request_checks(caplog) -> None:
    window = PoStKind(ProofKind.WINDOW_POST_PARTITION)
    winning = PoStKind(ProofKind.WINNING_POST)
    req = window_request()
    parsed = window.parse(req)
    assert parsed.circuit_id == "wpost-2k" and len(parsed.partitions) == 1
    assert window.owns("wpost-32g") and not window.owns("winning-32g")
    assert winning.owns("winning-2k")
    with pytest.raises(InputError, match="is a window-post proof type, not winning-post"):
        winning.parse(ProofRequest(ProofKind.WINNING_POST, registered_proof=10))
    # Curio's bench sends sector_size 32GiB whatever the proof: the proof type decides.
    import logging

    with caplog.at_level(logging.WARNING):
        big = dataclasses.replace(req, sector_size=32 << 30)
        assert window.parse(big).circuit_id == "wpost-2k"
    assert "sector_size 34359738368 disagrees with registered_proof 10 (2048 bytes)" in caplog.text
    three = ProofRequest(
        ProofKind.WINDOW_POST_PARTITION,
        registered_proof=10,
        vanilla_proofs=req.vanilla_proofs + req.vanilla_proofs[:1],
    )
    with pytest.raises(InputError, match="3 sectors, a wpost-2k partition holds 2"):
        window.parse(three)
    with pytest.raises(InputError, match="vanilla_proofs"):
        window.parse(
            ProofRequest(
                ProofKind.WINDOW_POST_PARTITION, registered_proof=10, vanilla_proofs=(b"x",)
            )
        )
    # WinningPoSt takes exactly the one challenged sector's vanilla proof.
    win_cfg = config_for_registered_proof(WINNING_2K)
    one = write_sector_proof(generate_sector_proof(win_cfg, RND, 5))
    for proofs in ((), (one, one)):
        with pytest.raises(InputError, match=f"{len(proofs)} given, WinningPoSt takes"):
            winning.parse(
                ProofRequest(
                    ProofKind.WINNING_POST, registered_proof=WINNING_2K, vanilla_proofs=proofs
                )
            )
    parsed = winning.parse(
        ProofRequest(
            ProofKind.WINNING_POST,
            registered_proof=WINNING_2K,
            vanilla_proofs=(one,),
            randomness=RND,
        )
    )
    assert parsed.circuit_id == "winning-2k"
    w = winning.synthesize("winning-2k", parsed.partitions[0])
    assert len(w.public_inputs) == 132
    # registered_proof 0 with a sector size: the size decides.
    assert winning._config(ProofRequest(ProofKind.WINNING_POST, sector_size=32 << 30)).kind
    assert window._config(ProofRequest(ProofKind.WINDOW_POST_PARTITION, sector_size=2048)).kind == (
        WINDOW
    )


@pytest.mark.slow
def test_window_post_2kib_end_to_end(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUZK_CIRCUIT_CACHE", str(tmp_path / "circuits"))
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params"), "generate_dev_keys": True},
        memory={"total_budget": "4GiB"},
        gpus={"backend": "cpu"},
    )
    e = Engine(cfg)
    e.start()
    try:
        good = window_request()
        bad = window_request(randomness=bytes(32))  # proofs answer other challenges
        job, _ = e.await_job(e.submit(good).job_id, 300)
        failed, _ = e.await_job(e.submit(bad).job_id, 300)
        assert job.state == JobState.COMPLETED, job.error
        assert failed.state == JobState.FAILED
        assert failed.error.startswith("partition 0: vanilla_proofs[0]")
        assert len(job.proof) == 192
        post = config_for_registered_proof(WINDOW_2K_V1_1)
        sectors = [read_sector_proof(b) for b in good.vanilla_proofs]
        pub = public_inputs(post, RND, [(s.sector_id, s.comm_r) for s in sectors], 0)
        vk = e.keys.verifying_key("wpost-2k")
        assert verifier.verify(vk, pub, Proof.from_bytes(job.proof))
        assert not verifier.verify(vk, [pub[0] + 1, *pub[1:]], Proof.from_bytes(job.proof))
    finally:
        e.stop()


@pytest.mark.parametrize("kind", [ProofKind.WINNING_POST, ProofKind.WINDOW_POST_PARTITION])
def test_counts_from_the_templates_are_the_matrices(kind: ProofKind, module_circuit_cache) -> None:
    """The shape and query sizes the engine sizes keys and partitions by come from
    the compiled templates and equal those of the R1CS built from them."""
    handler = PoStKind(kind)
    cid = "winning-2k" if kind == ProofKind.WINNING_POST else "wpost-2k"
    r1cs = handler.r1cs(cid)
    assert handler.shape(cid) == (r1cs.num_constraints, r1cs.num_variables)
    a_points = r1cs.num_inputs + int(r1cs.a_aux_density().sum())
    assert handler.query_sizes(cid) == (a_points, int(r1cs.b.column_mask().sum()))
    with pytest.raises(InputError, match="not a"):
        handler.r1cs("porep-2k")


def test_vanilla_proofs_of_another_size_are_refused_at_submission(tmp_path: Path) -> None:
    """A 2KiB WinningPoSt sent as 32GiB (cuzk-bench without --sector-size): refused
    when it is submitted, naming both sizes, before any key is made."""
    cfg2k = config_for_registered_proof(WINNING_2K)
    proof = write_sector_proof(generate_sector_proof(cfg2k, RND, 7, 0))
    req = ProofRequest(
        ProofKind.WINNING_POST, sector_size=32 << 30, vanilla_proofs=(proof,), randomness=RND
    )
    with pytest.raises(
        InputError,
        match=r"vanilla_proofs\[0\].*a path of a 2KiB sector; "
        r"the winning-post/32GiB circuit is for 32GiB sectors",
    ):
        PoStKind(ProofKind.WINNING_POST).parse(req)
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params"), "generate_dev_keys": True},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
    )
    e = Engine(cfg)
    e.start()
    try:
        with pytest.raises(InputError, match="the winning-post/32GiB circuit is for 32GiB"):
            e.submit(req)
        params = tmp_path / "params"
        assert not params.exists() or not any(params.iterdir())  # no key generated
        assert e.keys.status() == []
    finally:
        e.stop()
