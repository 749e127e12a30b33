"""PoRep C2 end to end through the daemon, on the CUDA backend.

On the CPU backend a 2KiB PoRep proof needs a 2.7 M-constraint development
key (~20 min in pure Python) and ~8 min of proving, far beyond CI; on a GPU
the key's points are made by :func:`cuzk.groth16.setup_gpu.setup_gpu`, which
the engine uses whenever its devices are CUDA ones. Run on the GPU machine
(scripts/device-check.sh -k filecoin_gpu); CI skips it with the reason.
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
from cuzk.groth16 import setup_gpu, verifier
from cuzk.groth16.proof import decode_proofs
from cuzk.service.proto import proving_pb2 as pb

V1_1_2KIB = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]


@pytest.mark.gpu
@pytest.mark.slow
def test_2kib_porep_through_the_daemon_on_the_gpu(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUZK_CIRCUIT_CACHE", str(tmp_path / "circuits"))
    made_on_gpu: list[int] = []
    real_setup_gpu = setup_gpu.setup_gpu

    def recording_setup_gpu(r1cs, *args, **kw):
        made_on_gpu.append(r1cs.num_constraints)
        return real_setup_gpu(r1cs, *args, **kw)

    monkeypatch.setattr(setup_gpu, "setup_gpu", recording_setup_gpu)
    _, c1 = seal_random(V1_1_2KIB, random.Random(5))
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
                registered_proof=V1_1_2KIB.proof_id,
            )
        ).job_id
        r = c.await_proof(job)
        assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
        assert made_on_gpu == [2_687_961]
        (proof,) = decode_proofs(r.proof)
        vk = d.engine.srs.verifying_key("porep-2k")
        pub = c1_public_inputs(c1, V1_1_2KIB, 0)
        assert verifier.verify(vk, pub, proof)
        assert not verifier.verify(vk, [pub[0] + 1, *pub[1:]], proof)
