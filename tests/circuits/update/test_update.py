"""SnapDeals: counts against storage-proofs-update, the bincode format, the
generator and verifier, and witnesses (honest and tampered) on the circuit."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.circuits.update.generate import generate_sector
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import (
    UpdateVerifier,
    challenges,
    dumps_partition_proofs,
    loads_partition_proofs,
    public_inputs,
    read_partition_proof,
    write_partition_proof,
)
from cuzk.circuits.update.witness import compile_partition, partition_hints, partition_witness
from cuzk.errors import InputError
from cuzk.hashers.merkle import PathElement
from cuzk.synthesis.compile import Compiler
from cuzk.synthesis.satisfy import compiled_unsatisfied_rows


@pytest.fixture(scope="module")
def compiler():
    return Compiler()


# storage-proofs-update/tests/circuit.rs (num_constraints: without the 5 input constraints)
@pytest.mark.parametrize(
    ("nodes", "constraints"),
    [
        (1 << 5, 1_248_389),
        (1 << 6, 1_705_039),
        (1 << 7, 2_165_109),
        (1 << 8, 2_620_359),
        (1 << 9, 6_300_021),
        (1 << 10, 6_760_091),
        (1 << 30, 81_049_499),
    ],
)
def test_counts_match_storage_proofs_update(compiler, nodes, constraints):
    cc = compile_partition(UpdateParams(nodes), compiler)
    assert cc.num_circuit_constraints == constraints
    assert cc.num_inputs == 5
    assert cc.num_constraints == constraints + 5  # bellperson's a.len()


def test_params_32gib():
    p = UpdateParams.of("32GiB")
    assert (p.partition_count, p.challenge_count, p.apex_leaf_count) == (16, 86, 128)
    assert p.hs == (7, 8, 9, 10, 11, 12) and p.h_default == 10
    assert p.k_and_h_select(3, 10) == 3 | (8 << 4)
    assert p.tree_r_arities == (8,) * 10


@pytest.fixture(scope="module")
def sector_2kib():
    p = UpdateParams.of("2KiB")
    s = generate_sector(p, random.Random(21))
    return p, s, s.partition_proof(0)


def test_bincode_and_json_round_trip(sector_2kib):
    _, _, proof = sector_2kib
    raw = write_partition_proof(proof)
    assert read_partition_proof(raw) == proof
    container = dumps_partition_proofs([proof, proof])
    assert loads_partition_proofs(container) == [proof, proof]
    with pytest.raises(InputError, match="trailing"):
        read_partition_proof(raw + b"\0")
    with pytest.raises(InputError) as e:
        read_partition_proof(raw[:-5], "p.bin")
    assert "truncated" in e.value.problem and e.value.field.startswith("challenge_proofs[9]")
    with pytest.raises(InputError, match="base64"):
        loads_partition_proofs(json.dumps(["***"]))


def test_challenges_use_partition_bits():
    p = UpdateParams.of("32GiB")
    cs = challenges(p, 12345, 7)
    assert len(cs) == 86 and all(c >> 26 == 7 for c in cs)


@pytest.mark.parametrize("size", ["2KiB", "16KiB"])
def test_generated_proofs_verify(size):
    p = UpdateParams.of(size)
    s = generate_sector(p, random.Random(5))
    roots = (s.comm_r_old, s.comm_d_new, s.comm_r_new)
    for k in range(p.partition_count):
        UpdateVerifier(p).verify(s.partition_proof(k), k, s.h, *roots)


@pytest.mark.slow
def test_generated_32gib_partition_verifies():
    p = UpdateParams.of("32GiB")
    s = generate_sector(p, random.Random(6))
    UpdateVerifier(p).verify(
        s.partition_proof(11), 11, s.h, s.comm_r_old, s.comm_d_new, s.comm_r_new
    )


def _flip(proof, what):
    c = proof.challenge_proofs[4]
    if what == "path element":
        mp = c.proof_r_old
        e = mp.base[1]
        mp = dataclasses.replace(
            mp,
            base=(mp.base[0], PathElement((e.hashes[0] ^ 1, *e.hashes[1:]), e.index), *mp.base[2:]),
        )
        c = dataclasses.replace(c, proof_r_old=mp)
    else:  # a replica value: the new data leaf
        c = dataclasses.replace(
            c, proof_d_new=dataclasses.replace(c.proof_d_new, leaf=(c.proof_d_new.leaf + 1) % R)
        )
    cps = list(proof.challenge_proofs)
    cps[4] = c
    return dataclasses.replace(proof, challenge_proofs=tuple(cps))


def test_witness_satisfies_and_tampering_breaks_it(compiler, sector_2kib):
    p, s, proof = sector_2kib
    roots = (s.comm_r_old, s.comm_d_new, s.comm_r_new)
    cc = compile_partition(p, compiler)
    plan = partition_witness(cc, p, partition_hints(p, proof, 0, s.h, *roots), compiler)
    assert [int(x) for x in fr_from_array(plan.W[1:5])] == public_inputs(p, 0, s.h, *roots)
    assert len(compiled_unsatisfied_rows(cc, plan.W)) == 0
    for what in ("path element", "data leaf"):
        bad = _flip(proof, what)
        with pytest.raises(InputError) as e:
            UpdateVerifier(p).verify(bad, 0, s.h, *roots)
        assert e.value.field.startswith("challenge_proofs[4]")
        plan = partition_witness(cc, p, partition_hints(p, bad, 0, s.h, *roots), compiler)
        assert len(compiled_unsatisfied_rows(cc, plan.W)) > 0


def test_engine_path(sector_2kib, tmp_path):
    p, s, proof = sector_2kib
    from cuzk.circuits.update import c2 as snap_c2
    from cuzk.circuits.update.vanilla import write_partition_proof as w

    assert snap_c2.circuit_id(p) == "snap-2k" and snap_c2.params_of("snap-2k") == p
    W, inputs = snap_c2.synthesize(
        p, w(proof), 0, s.comm_r_old, s.comm_d_new, s.comm_r_new, cache=tmp_path
    )
    assert inputs == public_inputs(p, 0, s.h, s.comm_r_old, s.comm_d_new, s.comm_r_new)
    assert len(compiled_unsatisfied_rows(snap_c2.compiled("snap-2k", tmp_path), W)) == 0
    with pytest.raises(InputError, match="not a SnapDeals circuit id"):
        snap_c2.params_of("porep-2k")
