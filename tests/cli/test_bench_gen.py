from __future__ import annotations

import json

from cuzk.circuits.porep.c1 import load_c1_file
from cuzk.circuits.porep.vanilla import verify_c1
from cuzk.cli.bench import main


def test_gen_c1_writes_a_verifiable_curio_c1_json(tmp_path, capsys):
    out = tmp_path / "c1.json"
    assert main(["gen-c1", "--sector-size", "2KiB", "--out", str(out), "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["proof"] == "StackedDrg2KiBV1_1" and report["bytes"] == out.stat().st_size
    c1, wrapper = load_c1_file(out.read_bytes(), str(out))
    assert wrapper is not None and wrapper.sector_size == 2048 and wrapper.sector_num == 1
    verify_c1(c1)
    # the same seed gives the same file
    again = tmp_path / "again.json"
    assert main(["gen-c1", "--sector-size", "2KiB", "--out", str(again), "--seed", "3"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_gen_c1_sealed_bare_and_errors(tmp_path, capsys):
    out = tmp_path / "c1.json"
    args = ["gen-c1", "--sector-size", "2KiB", "--sealed", "--bare", "--proof", "StackedDrg2KiBV1"]
    assert main([*args, "--out", str(out), "--verify"]) == 0
    c1, wrapper = load_c1_file(out.read_bytes(), str(out))
    assert wrapper is None and c1.registered_proof == "StackedDrg2KiBV1"
    capsys.readouterr()
    assert (
        main(["gen-c1", "--sector-size", "2KiB", "--proof", "StackedDrg8MiBV1", "--out", str(out)])
        == 2
    )
    assert "not a 2KiB proof" in capsys.readouterr().err


def test_prove_c1_witnesses_from_worker_processes_are_the_in_process_ones(tmp_path):
    """prove-c1 builds C2 through the daemon's path: the request parsed by
    ``c2.parse``, witnesses by ``c2.synthesize`` in this process, or (with
    --processes) by the PoRep kind in a SynthesisPool; both give the same
    assignment and public inputs."""
    import random

    import numpy as np

    from cuzk.circuits.porep import c2
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper
    from cuzk.circuits.porep.witness import c1_public_inputs
    from cuzk.cli.bench_gen import _witnesses_in_processes

    proof_type = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    _, c1 = seal_random(proof_type, random.Random(11))
    raw = dumps_wrapper(C1Wrapper(5, dumps_c1(c1), 2048))
    request = c2.parse(raw, str(tmp_path / "c1.json"))
    want, want_inputs = c2.synthesize(request, 0, verify_vanilla=False)
    assert want_inputs == c1_public_inputs(c1, proof_type, 0)
    got = list(_witnesses_in_processes(request, [0], processes=1))
    assert [k for k, _, _ in got] == [0]
    assert np.array_equal(got[0][1], want) and got[0][2] == want_inputs
