"""``cuzk-bench prove-c1``: C2 through the daemon's path."""

from __future__ import annotations


def test_prove_c1_witnesses_from_worker_processes_are_the_in_process_ones(tmp_path):
    """prove-c1 builds C2 through the daemon's path: the request parsed by
    ``c2.parse``, witnesses by ``c2.synthesize`` in this process, or (with
    --processes) by the PoRep kind in a SynthesisPool; both give the same
    assignment and public inputs."""
    import random

    import numpy as np

    from cuzk.bench.prove_c1 import _witnesses_in_processes
    from cuzk.circuits.porep import c2
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper
    from cuzk.circuits.porep.witness import c1_public_inputs

    proof_type = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    _, c1 = seal_random(proof_type, random.Random(11))
    raw = dumps_wrapper(C1Wrapper(5, dumps_c1(c1), 2048))
    request = c2.parse(raw, str(tmp_path / "c1.json"))
    want, want_inputs = c2.synthesize(request, 0, verify_vanilla=False)
    assert want_inputs == c1_public_inputs(c1, proof_type, 0)
    got = list(_witnesses_in_processes(request, [0], processes=1))
    assert [k for k, _, _ in got] == [0]
    assert np.array_equal(got[0][1], want) and got[0][2] == want_inputs


def test_prove_c1_hint_tables_make_the_cpu_witness_on_a_device(tmp_path):
    """prove-c1's device witness (the daemon's ``[pipeline] witness = "device"``):
    hint tables made here or in worker processes, each run through the
    circuit's static plan on a device (the numpy interpreter here) is the CPU
    witness, and the inputs it carries are checked."""
    import random

    import numpy as np
    import pytest

    from cuzk.bench.prove_c1 import _hint_tables, _kind
    from cuzk.circuits.porep import c2
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper
    from cuzk.errors import InputError
    from cuzk.r1cs.inputs import check_public_inputs, input_rows
    from cuzk.synthesis.program_numpy import NumpyWitness

    proof_type = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    _, c1 = seal_random(proof_type, random.Random(12))
    raw = dumps_wrapper(C1Wrapper(5, dumps_c1(c1), 2048))
    request = c2.parse(raw, str(tmp_path / "c1.json"))
    want, want_inputs = c2.synthesize(request, 0, verify_vanilla=False)
    here = list(_hint_tables(request, [0], processes=0))
    there = list(_hint_tables(request, [0], processes=1))
    assert [k for k, _, _ in here] == [k for k, _, _ in there] == [0]
    assert np.array_equal(here[0][1], there[0][1]) and here[0][2] == there[0][2] == want_inputs
    plan = _kind().witness_plan(request.circuit_id)
    W = plan.run_table(NumpyWitness(), here[0][1])
    assert np.array_equal(W, want)
    check_public_inputs(input_rows(W, len(want_inputs)), want_inputs, request.source, "partition 0")
    wrong = [want_inputs[0] + 1, *want_inputs[1:]]
    with pytest.raises(InputError, match="partition 0: the witness does not carry"):
        check_public_inputs(input_rows(W, len(wrong)), wrong, request.source, "partition 0")
    with pytest.raises(ValueError, match="a hint table of shape"):
        plan.run_table(NumpyWitness(), here[0][1][:-1])
