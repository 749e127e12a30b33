"""Witness programs: recorded once, run by the numpy interpreter, equal to the
CPU witness plan bit for bit (random value operations, then a real PoRep)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from random_witness import random_case

from cuzk.algebra.fields import R
from cuzk.circuits.porep.circuit import PoRepShape
from cuzk.circuits.porep.witness import (
    compile_partition,
    partition_hints,
    partition_witness,
    static_plan,
)
from cuzk.gadgets.subcircuit import BIT, Subcircuit
from cuzk.synthesis.compile import Compiler
from cuzk.synthesis.program import CONST, Op, TraceValues
from cuzk.synthesis.program_numpy import NumpyWitness
from cuzk.synthesis.static_plan import load_or_build


def test_random_value_operations_record_and_run_as_the_cpu_plan_computes():
    """Every value operation of the gadgets, on constants and lanes, through
    ports and hints: the recorded programs' W equals the CPU plan's W."""
    rng = random.Random(13)
    for seed in range(6):
        sp, hints, want = random_case(rng, seed)
        W = sp.run(NumpyWitness(), hints)
        assert np.array_equal(W, want), f"seed {seed}"
        assert sp.passes[1].lanes.lanes == len(hints)


def test_constants_fold_as_lane_values_do():
    from cuzk.synthesis.program import PoseidonTables, Recorder

    V = TraceValues(Recorder(PoseidonTables()))
    assert V.add(R - 1, 5) == 4 and V.mul(3, R - 1) == R - 3
    assert V.b_xor(True, True) is False and V.b_not(False) is True
    assert V.w_sum([1, 2, 3]) == 6 and V.w_rotr(1, 1) == 1 << 31
    assert V.w_from_bits([True, False, True]) == 5
    assert V.select(True, 7, 9) == 7 and V.from_bit(np.bool_(True)) == 1
    assert V.rec.instrs == []  # nothing was recorded


def test_recorded_programs_are_encoded_with_dead_values_dropped():
    from cuzk.synthesis.program import PoseidonTables, Recorder, encode

    rec = Recorder(PoseidonTables())
    V = TraceValues(rec)
    x = rec.emit(Op.U_PORT, imm=0)
    V.w_xor(x, 5)  # never used: dropped
    y = V.w_rotr(x, 3)
    rec.store(0, y, aux=True)
    rec.store(1, R - 1, aux=True)  # an Fr constant above 2^64
    p = encode(Subcircuit("k", (BIT,), None), rec.instrs, 0, [])
    assert [Op(o) for o in p.ops[:, 0]] == [Op.U_PORT, Op.U_ROTR, Op.ST_AUX_U, Op.ST_AUX_F]
    assert p.ops[1, 5] == 3 | 32 << 8 and p.ops[3, 2] == CONST | 0
    assert p.n_u == 1  # y reuses x's register


@pytest.mark.slow
def test_porep_2kib_static_plan_equals_the_cpu_plan(sealed_2kib_c1):
    """A really sealed 2KiB partition: every pass recorded once, run by the
    numpy interpreter, gives the CPU plan's assignment bit for bit."""
    pt, c1 = sealed_2kib_c1
    shape = PoRepShape.of(pt.sector)
    compiler = Compiler()
    cc = compile_partition(shape, compiler)
    hints = partition_hints(c1, 0)
    want = partition_witness(cc, shape, hints, compiler).W
    sp = static_plan(cc, shape, hints, compiler)
    assert [p.program.key.split("/")[0] for p in sp.passes[:2]] == ["porep", "porep"]
    W = sp.run(NumpyWitness(), hints)
    assert np.array_equal(W, want)
    with pytest.raises(ValueError, match="hints with"):
        sp.hint_table(hints.challenges[0])


@pytest.fixture(scope="module")
def sealed_2kib_c1():
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random

    sealed, c1 = seal_random(REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"], random.Random(7))
    return sealed.proof_type, c1


def test_window_post_static_plan_equals_the_cpu_witness(tmp_path):
    """One lane per sector slot at the top (the circuit is copies of a slot)."""
    from cuzk.circuits.post.circuit import compile_post, witness
    from cuzk.circuits.post.config import WINDOW, post_config
    from cuzk.circuits.post.device_witness import slot_hint_arrays
    from cuzk.circuits.post.device_witness import static_plan as post_plan
    from cuzk.circuits.post.generate import generate_sector_proof

    config = post_config(WINDOW, "2KiB")
    proofs = [generate_sector_proof(config, bytes(32), 3)]  # the second slot is padding
    cc = compile_post(config)
    hints = slot_hint_arrays(config, proofs)
    sp = post_plan(cc, config, hints)
    assert sp.passes[0].lanes.lanes == 2 and sp.copies == 2
    want = witness(cc, config, proofs)
    assert np.array_equal(sp.run(NumpyWitness(), hints), want)
    with pytest.raises(ValueError, match="copies"):
        sp.hint_table(hints[:1])
    # kept on disk: loaded, it makes the same witness (and is not recorded again)
    built = []
    loaded = load_or_build(cc.circuit_id, lambda: built.append(1) or sp, tmp_path)
    again = load_or_build(cc.circuit_id, lambda: built.append(1) or sp, tmp_path)
    assert built == [1] and loaded is sp and again is not sp
    assert [p.wave for p in again.passes] == [p.wave for p in sp.passes]
    assert np.array_equal(again.run(NumpyWitness(), hints), want)

    class Failing(NumpyWitness):
        """A device that fails in a pass: the assignment it made is given back."""

        def __init__(self) -> None:
            self.freed: list = []

        def run(self, *args):
            raise RuntimeError("the device failed")

        def free(self, W):
            self.freed.append(W)

    dev = Failing()
    with pytest.raises(RuntimeError, match="the device failed"):
        sp.run(dev, hints)
    assert len(dev.freed) == 1 and dev.freed[0].shape == want.shape
