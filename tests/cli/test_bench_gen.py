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
    """prove-c1 --processes takes each partition's witness from a SynthesisPool
    running the daemon's PoRep kind; it equals prove-c1's own compile-and-witness."""
    import random

    import numpy as np

    from cuzk.circuits.compile import Compiler
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.circuit import PoRepShape
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper
    from cuzk.circuits.porep.witness import compile_partition, partition_hints, partition_witness
    from cuzk.cli.bench_gen import _witnesses_in_processes

    proof_type = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    _, c1 = seal_random(proof_type, random.Random(11))
    path = tmp_path / "c1.json"
    path.write_bytes(dumps_wrapper(C1Wrapper(5, dumps_c1(c1), 2048)))
    compiler = Compiler()
    shape = PoRepShape.of(proof_type.sector)
    cc = compile_partition(shape, compiler)
    want = partition_witness(cc, shape, partition_hints(c1, 0, str(path)), compiler).W
    got = list(_witnesses_in_processes(path, [0], processes=1))
    assert [k for k, _ in got] == [0]
    assert np.array_equal(got[0][1], want)
