"""PoRep C2 end to end through the daemon, on the CUDA backend.

The engine writes the 2.7 M-constraint development key as files under the
circuit's real names, its points made on the GPU
(:class:`cuzk.groth16.setup_gpu.GpuPoints`), then loads the file into VRAM
like any Filecoin parameters. Run on the GPU machine (scripts/device-check.sh
-k filecoin_gpu); CI skips it with the reason (tests/service/test_key_files.py
proves the same kinds on the CPU).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from daemon_harness import running_daemon

from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.sealer import seal_random
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.circuits.porep.witness import c1_public_inputs
from cuzk.engine.kinds.base import KeyFiles
from cuzk.groth16 import verifier
from cuzk.groth16.proof import decode_proofs
from cuzk.service.proto import proving_pb2 as pb

V1_1_2KIB = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize(
    "proof_type",
    [V1_1_2KIB, REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1_Feat_SyntheticPoRep"]],
    ids=["interactive", "synthetic"],
)
def test_2kib_porep_through_the_daemon_on_the_gpu(tmp_path: Path, monkeypatch, proof_type) -> None:
    """Interactive, and synthetic (issue 31 item 1: its challenges from the synthetic
    set, the same circuit and key)."""
    monkeypatch.setenv("CUZK_CIRCUIT_CACHE", str(tmp_path / "circuits"))
    import cuzk.engine.keystore.sources as srs

    made_on_gpu: list[int] = []
    real_gpu_points = srs.gpu_points
    monkeypatch.setattr(
        srs, "gpu_points", lambda dev: made_on_gpu.append(dev.ordinal) or real_gpu_points(dev)
    )
    _, c1 = seal_random(proof_type, random.Random(5))
    raw = dumps_wrapper(C1Wrapper(1, dumps_c1(c1), 2048))
    with running_daemon(
        tmp_path,
        gpus={"backend": "cuda"},
        srs={"generate_dev_keys": True},
        memory={"total_budget": "64GiB"},
    ) as d:
        assert d.engine.devices and all(dev.backend.name == "cuda" for dev in d.engine.devices)
        c = d.client()
        job = c.submit(
            pb.SubmitProofRequest(
                proof_kind=pb.POREP_SEAL_COMMIT,
                vanilla_proof=raw,
                sector_size=2048,
                registered_proof=proof_type.proof_id,
            )
        ).job_id
        r = c.await_proof(job)
        assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
        assert made_on_gpu == [0]
        files = KeyFiles.filecoin("porep-2k")
        assert (tmp_path / "params" / files.params).is_file()
        assert (tmp_path / "params" / files.vk).is_file()
        (s,) = [s for s in c.status().loaded_srs if s.circuit_id == "porep-2k"]
        assert s.tier == pb.SRSStatus.HOT
        (proof,) = decode_proofs(r.proof)
        vk = d.engine.keys.verifying_key("porep-2k")
        pub = c1_public_inputs(c1, proof_type, 0)
        assert verifier.verify(vk, pub, proof)
        assert not verifier.verify(vk, [pub[0] + 1, *pub[1:]], proof)
        # the witness was made on the GPU ([pipeline] witness = auto on CUDA), and
        # every backend hold fitted the engine's reservations (key, partition,
        # witness plan): no estimate fell short
        text = d.engine.metrics.text()
        assert 'cuzk_prover_step_seconds_count{proof_kind="porep",step="witness"} 1.0' in text
        vram = d.engine.devices[0].backend.ctx.budget
        assert vram.overdrawn_by_operation == {}, vram.overdrawn_by_operation
        assert "witness plan porep-2k" in vram.peak_by_operation
