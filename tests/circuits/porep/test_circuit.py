"""The StackedDRG circuit: counts pinned against rust-fil-proofs and Curio, the
compiled layout against inline synthesis, and real witnesses satisfying it."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.circuits.porep import c2
from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.circuit import PoRepShape
from cuzk.circuits.porep.params import custom_proof, parse_size, sector_params
from cuzk.circuits.porep.sealer import seal_random
from cuzk.circuits.porep.sha_blocks import sha256_blocks
from cuzk.circuits.porep.types import C1Wrapper, PathElement
from cuzk.circuits.porep.vanilla import Verifier
from cuzk.circuits.porep.witness import (
    c1_public_inputs,
    challenge_rows,
    compile_partition,
    partition_hints,
    partition_witness,
)
from cuzk.errors import InputError
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.sha256 import sha256
from cuzk.gadgets.subcircuit import Subcircuit
from cuzk.hashers.merkle import TreeShape
from cuzk.r1cs import ConstraintSystem
from cuzk.synthesis.compile import Compiler, compile_circuit
from cuzk.synthesis.satisfy import compiled_unsatisfied_rows, unsatisfied_rows


@pytest.fixture(scope="module")
def compiler():
    return Compiler()


# rust-fil-proofs storage-proofs-porep/tests/stacked_circuit.rs: one challenge,
# 2 layers, 8 leaves per base tree (num_constraints: no input constraints).
RUST_TEST_CIRCUITS = [
    (8, TreeShape(8), 1_199_620),
    (8, TreeShape(2), 1_206_212),
    (32, TreeShape(8, 4), 1_296_576),
    (64, TreeShape(8, 4, 2), 1_346_982),
]


@pytest.mark.parametrize(("nodes", "shape", "constraints"), RUST_TEST_CIRCUITS)
def test_counts_match_rust_fil_proofs_tests(compiler, nodes, shape, constraints):
    cc = compile_partition(PoRepShape(nodes, 2, 1, shape), compiler)
    assert cc.num_circuit_constraints == constraints
    assert cc.num_inputs == 22


@pytest.mark.slow
def test_registered_sizes(compiler):
    """a.len() (input constraints included), inputs (ONE included), aux."""
    expected = {
        "2KiB": (2_687_961, 40, 2_685_673),
        "8MiB": (3_844_969, 40, 3_842_449),
        "512MiB": (4_423_473, 40, 4_420_837),
        "32GiB": (130_278_869, 328, 130_169_893),
        "64GiB": (131_186_177, 328, 131_076_643),
    }
    for size, (constraints, inputs, aux) in expected.items():
        cc = compile_partition(PoRepShape.of(sector_params(parse_size(size))), compiler)
        assert (cc.num_constraints, cc.num_inputs, cc.num_aux) == (constraints, inputs, aux), size
    # Curio's PCE extraction of the 32GiB circuit (cuzk-project.md): matrix non-zeros
    cc = compile_partition(PoRepShape.of(sector_params(parse_size("32GiB"))), compiler)
    assert cc.nnz == (309_405_051, 130_327_340, 282_656_500)
    assert cc.domain_size == 1 << 27


def test_sha256_blocks_have_the_inline_gadgets_layout():
    """Block subcircuits compile to exactly the inline SHA-256 gadget's R1CS."""
    rng = random.Random(3)
    pattern = [rng.choice([None, None, None, True, False]) for _ in range(8 * 80)]

    def message(cs):
        return [
            Boolean.constant(p) if p is not None else Boolean.of(AllocatedBit.alloc(cs, None))
            for p in pattern
        ]

    def inline(cs, ports, hints):
        sha256(cs, message(cs))
        return []

    def blocks(cs, ports, hints):
        sha256_blocks(cs, message(cs))
        return []

    a = compile_circuit("inline", Subcircuit("t-inline", (), inline)).to_r1cs()
    compiled = compile_circuit("blocks", Subcircuit("t-blocks", (), blocks))
    b = compiled.to_r1cs()
    assert (a.num_inputs, a.num_aux) == (b.num_inputs, b.num_aux)
    for ma, mb in ((a.a, b.a), (a.b, b.b), (a.c, b.c)):
        assert np.array_equal(ma.indptr, mb.indptr)
        assert np.array_equal(ma.indices, mb.indices)
        assert np.array_equal(ma.coeffs, mb.coeffs)


def test_compiled_check_agrees_with_the_materialised_r1cs():
    """A witness of SHA-256 over random bits (from the inline builder), checked
    both ways, then with one bit of one SHA-256 block's aux flipped."""
    rng = random.Random(4)
    bits = [rng.random() < 0.5 for _ in range(8 * 70)]

    def synth(cs, ports, hints):
        sha256_blocks(cs, [Boolean.of(AllocatedBit.alloc(cs, b)) for b in bits])
        return []

    compiled = compile_circuit("check", Subcircuit("t-check", (), synth))
    cs = ConstraintSystem(witness=True, keep_names=False)
    synth(cs, [], None)
    cs.finish()
    W = fr_to_array(cs.assignment())
    r1cs = compiled.to_r1cs()
    assert len(unsatisfied_rows(r1cs, W)) == 0
    assert len(compiled_unsatisfied_rows(compiled, W)) == 0
    W[compiled.num_inputs + 900, 0] ^= 1
    bad = unsatisfied_rows(r1cs, W)
    assert len(bad) > 0
    assert np.array_equal(bad, compiled_unsatisfied_rows(compiled, W))


@pytest.fixture(scope="module")
def tiny():
    """rust-fil-proofs' 8-node test graph with 4 challenges, really sealed."""
    pt = custom_proof(8, 2, 4, TreeShape(8))
    _, c1 = seal_random(pt, random.Random(11))
    Verifier(pt).verify(c1)
    return pt, c1


def _witness(compiler, pt, c1):
    shape = PoRepShape.of(pt.sector)
    cc = compile_partition(shape, compiler)
    plan = partition_witness(cc, shape, partition_hints(c1, 0), compiler)
    return cc, plan.W


@pytest.mark.slow
def test_sealed_2kib_witness_satisfies_the_2kib_circuit(sealed_2kib, tmp_path):
    """Through the engine-facing path: Curio's c1.json, the compiled-circuit
    cache, vanilla verification, witness and public inputs."""
    sealed, c1 = sealed_2kib
    pt = sealed.proof_type
    raw = dumps_wrapper(C1Wrapper(234, dumps_c1(c1), 2048))
    request = c2.parse(raw, "c1.json")
    assert request.circuit_id == "porep-2k" and request.partitions == 1
    W, inputs = c2.synthesize(request, 0, cache=tmp_path)
    assert inputs == c1_public_inputs(c1, pt, 0)
    cc = c2.compiled("porep-2k", tmp_path)
    assert cc.num_constraints == 2_687_961
    assert [int(x) for x in fr_from_array(W[1 : cc.num_inputs])] == inputs
    assert len(compiled_unsatisfied_rows(cc, W)) == 0
    assert list(tmp_path.glob("porep-2KiB-*.npz"))  # cached for the next run


def _flip(b: bytes, bit: int = 1) -> bytes:
    return bytes([b[0] ^ bit]) + b[1:]


def _tamper(p, what):
    """One challenge proof with one value changed."""
    rc = p.replica_column_proofs
    if what == "label":  # a DRG parent's layer-1 label in its column
        cp = rc.drg_parents[1]
        rows = (_flip(cp.column.rows[0], 4), *cp.column.rows[1:])
        cp = dataclasses.replace(cp, column=dataclasses.replace(cp.column, rows=rows))
        rc = dataclasses.replace(rc, drg_parents=(rc.drg_parents[0], cp, *rc.drg_parents[2:]))
        return dataclasses.replace(p, replica_column_proofs=rc), "drg_parents[1].inclusion_proof"
    if what == "path element":  # a sibling in tree R
        mp = p.comm_r_last_proof
        e = mp.base[0]
        e = PathElement((*e.hashes[:3], _flip(e.hashes[3]), *e.hashes[4:]), e.index)
        mp = dataclasses.replace(mp, base=(e, *mp.base[1:]))
        return dataclasses.replace(p, comm_r_last_proof=mp), "comm_r_last_proof"
    assert what == "column value"  # an expander parent's last-layer value
    cp = rc.exp_parents[5]
    rows = (*cp.column.rows[:-1], _flip(cp.column.rows[-1], 2))
    cp = dataclasses.replace(cp, column=dataclasses.replace(cp.column, rows=rows))
    exp = (*rc.exp_parents[:5], cp, *rc.exp_parents[6:])
    rc = dataclasses.replace(rc, exp_parents=exp)
    return dataclasses.replace(p, replica_column_proofs=rc), "exp_parents[5].inclusion_proof"


@pytest.mark.slow
def test_tampered_values_fail_vanilla_and_leave_the_circuit_unsatisfied(compiler, tiny):
    """Challenge 0 honest, challenges 1–3 each with one value changed: the
    vanilla verifier names the changed proof, and exactly the tampered
    challenges' blocks of the circuit have unsatisfied constraints."""
    pt, c1 = tiny
    proofs = list(c1.partitions[0])
    for i, what in enumerate(["label", "path element", "column value"], start=1):
        proofs[i], field = _tamper(proofs[i], what)
        one = list(c1.partitions[0])
        one[i] = proofs[i]
        with pytest.raises(InputError) as e:
            Verifier(pt).verify(dataclasses.replace(c1, partitions=(tuple(one),)))
        assert e.value.field.endswith(field) and f"[0][{i}]" in e.value.field
    bad = dataclasses.replace(c1, partitions=(tuple(proofs),))
    cc, W = _witness(compiler, pt, bad)
    rows = compiled_unsatisfied_rows(cc, W)
    blocks = challenge_rows(cc)
    assert len(blocks) == 4
    hit = {i for i, (lo, hi) in enumerate(blocks) if ((rows >= lo) & (rows < hi)).any()}
    assert hit == {1, 2, 3}
    assert rows.min() >= blocks[1][0]  # the header and the honest challenge hold


@pytest.mark.slow
def test_synthetic_8mib_c1_witness_satisfies(compiler):
    """A generated (sparse) 8MiB C1 output: vanilla-valid, and its witness
    satisfies the 3,844,969-constraint circuit."""
    from cuzk.circuits.porep.params import default_proof
    from cuzk.circuits.porep.synthetic import generate_c1

    pt = default_proof(parse_size("8MiB"))
    c1 = generate_c1(pt, random.Random(88))
    Verifier(pt).verify(c1)
    cc, W = _witness(compiler, pt, c1)
    assert cc.num_constraints == 3_844_969
    assert [int(x) for x in fr_from_array(W[1 : cc.num_inputs])] == c1_public_inputs(c1, pt, 0)
    assert len(compiled_unsatisfied_rows(cc, W)) == 0
