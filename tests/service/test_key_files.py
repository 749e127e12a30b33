"""The daemon with parameter files, as a storage provider runs it.

``cuzk gen-params`` writes development keys of the four 2KiB Filecoin
circuits (PoRep, WinningPoSt, WindowPoSt, SnapDeals) under the file names
rust-fil-proofs gives Filecoin's own; the daemon finds them in its
``param_cache``, loads them (generating nothing), proves each kind, and
``cuzk verify --vk`` accepts every proof against the ``.vk`` file beside the
parameters (each witness made from the circuit's static plan, as a GPU makes
it, on the CPU's numpy interpreter). A truncated, bit-flipped or wrong-circuit ``.params`` fails its
jobs with the file and the problem named, while the daemon goes on serving
the other kinds, and a repaired file serves without a restart.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from daemon_harness import running_daemon

from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.sealer import seal_random
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.circuits.porep.witness import c1_public_inputs
from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import write_sector_proof
from cuzk.circuits.update.generate import generate_sector
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import write_partition_proof
from cuzk.cli.main import main as cuzk
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds import default_registry
from cuzk.engine.kinds.base import KeyFiles
from cuzk.formats.bellperson import MappedParams
from cuzk.hashers.domain import fr_to_le_bytes
from cuzk.service.convert import request_to_pb

V1_1_2KIB = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
RND = bytes(range(32))
WINNING_2K, WINDOW_2K_V1_1 = 0, 10  # RegisteredPoStProof numbers
KINDS = {  # gen-params kind → the circuit id the daemon proves
    "porep": "porep-2k",
    "winning-post": "winning-2k",
    "window-post": "wpost-2k",
    "snap": "snap-2k",
}


pytestmark = pytest.mark.usefixtures("module_circuit_cache")


@pytest.fixture(scope="module")
def params_dir(tmp_path_factory, module_circuit_cache) -> Path:
    d = tmp_path_factory.mktemp("filecoin-proof-parameters")
    for seed, kind in enumerate(KINDS):
        argv = ["gen-params", kind, "--sector-size", "2KiB", "--out", str(d), "--seed", str(seed)]
        assert cuzk([*argv, "--backend", "cpu"]) == 0
    return d


def requests() -> dict[str, ProofRequest]:
    _, c1 = seal_random(V1_1_2KIB, random.Random(5))
    win = config_for_registered_proof(WINNING_2K)
    window = config_for_registered_proof(WINDOW_2K_V1_1)
    snap = generate_sector(UpdateParams.of("2KiB"), random.Random(21))
    return {
        "porep-2k": ProofRequest(
            ProofKind.POREP_SEAL_COMMIT,
            vanilla_proof=dumps_wrapper(C1Wrapper(1, dumps_c1(c1), 2048)),
            sector_size=2048,
            registered_proof=V1_1_2KIB.proof_id,
        ),
        "winning-2k": ProofRequest(
            ProofKind.WINNING_POST,
            registered_proof=WINNING_2K,
            vanilla_proofs=(write_sector_proof(generate_sector_proof(win, RND, 5)),),
            randomness=RND,
        ),
        "wpost-2k": ProofRequest(
            ProofKind.WINDOW_POST_PARTITION,
            registered_proof=WINDOW_2K_V1_1,
            vanilla_proofs=tuple(
                write_sector_proof(generate_sector_proof(window, RND, 100 + i, i)) for i in range(2)
            ),
            randomness=RND,
        ),
        "snap-2k": ProofRequest(
            ProofKind.SNAP_DEALS_UPDATE,
            vanilla_proofs=tuple(
                write_partition_proof(snap.partition_proof(k))
                for k in range(snap.params.partition_count)
            ),
            comm_r_old=fr_to_le_bytes(snap.comm_r_old),
            comm_d_new=fr_to_le_bytes(snap.comm_d_new),
            comm_r_new=fr_to_le_bytes(snap.comm_r_new),
            sector_size=2048,
        ),
    }, c1


def public_inputs(req: ProofRequest) -> list[list[int]]:
    """Each partition's public inputs, as the kind computes them for its witness."""
    handler, parsed = default_registry().parse(req)
    return [list(handler.synthesize(parsed.circuit_id, p).public_inputs) for p in parsed.partitions]


def config(params: Path, witness: str = "auto") -> dict:
    return {
        "srs": {"param_cache": str(params), "generate_dev_keys": True},
        "memory": {"total_budget": "12GiB"},
        "pipeline": {"witness": witness},
    }


def prove(d, req: ProofRequest):
    c = d.client()
    return c.await_proof(c.submit(request_to_pb(req)).job_id)


@pytest.mark.slow
def test_the_daemon_proves_every_kind_with_the_files_and_cuzk_verify_accepts(
    tmp_path: Path, params_dir: Path, capsys
) -> None:
    from cuzk.service.proto import proving_pb2 as pb

    before = sorted(os.listdir(params_dir))
    assert before == sorted(
        name for f in map(KeyFiles.filecoin, KINDS.values()) for name in (f.params, f.vk)
    )
    reqs, c1 = requests()
    # every kind's witness made as on a GPU, from its static plan (the CPU
    # device: the numpy interpreter); the damaged-files test below takes the
    # host witness (auto, on the CPU)
    with running_daemon(tmp_path, **config(params_dir, witness="device")) as d:
        for cid, req in reqs.items():
            r = prove(d, req)
            assert r.status == pb.AwaitProofResponse.COMPLETED, (cid, r.error_message)
            pub = public_inputs(req)
            if cid == "porep-2k":
                assert pub == [c1_public_inputs(c1, V1_1_2KIB, 0)]
            files = KeyFiles.filecoin(cid)
            proof, public = tmp_path / f"{cid}.proof", tmp_path / f"{cid}.json"
            proof.write_bytes(r.proof)
            public.write_text(json.dumps([[str(x) for x in p] for p in pub]))
            vk = params_dir / files.vk
            argv = ["verify", "--vk", str(vk), "--proof", str(proof), "--public", str(public)]
            assert cuzk(argv) == 0, (cid, capsys.readouterr())
            wrong = [[str(p[0] + 1), *map(str, p[1:])] for p in pub]
            public.write_text(json.dumps(wrong))
            assert cuzk(argv) == 1  # and not any inputs at all
        text = d.engine.metrics.text()
        for kind in ("porep", "winning", "wpost", "snap"):
            assert f'cuzk_prover_step_seconds_count{{proof_kind="{kind}",step="witness"}} ' in text
        srs = {s.circuit_id: s for s in d.client().status().loaded_srs}
        assert set(KINDS.values()) <= set(srs)
        assert all(
            srs[cid].size_bytes == (params_dir / KeyFiles.filecoin(cid).params).stat().st_size
            for cid in KINDS.values()
        )
    assert sorted(os.listdir(params_dir)) == before  # found, not generated


def damaged_copy(good: Path, to: Path) -> dict[str, str]:
    """A copy of the parameters with three files damaged; what each job's error must name."""
    to.mkdir()
    for name in os.listdir(good):
        shutil.copyfile(good / name, to / name)
    win, wpost, snap = (KeyFiles.filecoin(c) for c in ("winning-2k", "wpost-2k", "snap-2k"))
    p = to / win.params
    p.write_bytes(p.read_bytes()[:-100])
    p = to / wpost.params
    data = bytearray(p.read_bytes())
    sec = MappedParams(good / wpost.params).sections["h"]
    data[sec.offset + 7 * 96 + 95] ^= 1  # h[7]'s y: off the curve
    p.write_bytes(bytes(data))
    shutil.copyfile(good / win.params, to / snap.params)  # another circuit's key
    shutil.copyfile(good / win.vk, to / snap.vk)
    return {
        "winning-2k": f"{to / win.params}: b_g2: ",  # the last section runs past the end
        "wpost-2k": f"{to / wpost.params}: h[7]: not on the G1 curve (byte offset "
        f"{sec.offset + 7 * 96})",
        "snap-2k": f"{to / snap.params}: h: ",
    }


@pytest.mark.slow
def test_damaged_files_fail_their_jobs_by_name_and_the_daemon_serves_on(
    tmp_path: Path, params_dir: Path
) -> None:
    from cuzk.service.proto import proving_pb2 as pb

    broken = tmp_path / "params"
    must_name = damaged_copy(params_dir, broken)
    reqs, _ = requests()
    with running_daemon(tmp_path / "home", **config(broken)) as d:
        for cid, needle in must_name.items():
            r = prove(d, reqs[cid])
            assert r.status == pb.AwaitProofResponse.FAILED, cid
            assert needle in r.error_message, (cid, r.error_message)
        assert "truncated" in prove(d, reqs["winning-2k"]).error_message
        assert "key and circuit differ" in prove(d, reqs["snap-2k"]).error_message
        # the daemon serves on: a demo proof, then the repaired WinningPoSt file
        demo = d.client().submit(
            pb.SubmitProofRequest(proof_kind=pb.CUZK_DEMO, vanilla_proof=_demo_body())
        )
        assert d.client().await_proof(demo.job_id).status == pb.AwaitProofResponse.COMPLETED
        win = KeyFiles.filecoin("winning-2k").params
        shutil.copyfile(params_dir / win, broken / win)
        r = prove(d, reqs["winning-2k"])
        assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
    assert not any(n.endswith(".partial") for n in os.listdir(broken))


def _demo_body() -> bytes:
    from cuzk.circuits.demo import DemoCircuit
    from cuzk.engine.kinds import demo

    return demo.make_vanilla(DemoCircuit(20, 1), 1)
