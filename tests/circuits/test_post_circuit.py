"""The PoSt circuit: layout equal to inline synthesis, pinned counts, and
witnesses (vectorised) that satisfy it — including the real 32GiB sector."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.circuits.post.challenges import sector_leaf_challenges
from cuzk.circuits.post.circuit import (
    compile_post,
    public_inputs,
    sector_subcircuit,
    single_sector_config,
    slot_hints,
    witness,
)
from cuzk.circuits.post.config import WINDOW, WINNING, config_for_registered_proof, post_config
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import read_sector_proof
from cuzk.errors import InputError
from cuzk.hashers.field import limb_fr
from cuzk.r1cs import ConstraintSystem
from cuzk.synthesis.cache import load_or_build_r1cs, load_or_compile

DATA = Path(__file__).parent.parent / "data" / "curio-windowpost-32g"
RND = bytes(range(32))


def _inline(config, proofs):
    cs = ConstraintSystem(keep_names=False)
    sub = sector_subcircuit(config.arities, config.circuit_challenge_count)
    slots = [h for p in proofs for h in slot_hints(config, p)]
    slots += [slots[-1]] * (config.circuit_sector_count - len(slots))
    for h in slots:
        sub.synth(cs, [], h)
    return cs


@pytest.mark.parametrize(
    "kind", [pytest.param(WINNING, marks=pytest.mark.slow), pytest.param(WINDOW)]
)
def test_2kib_compiled_equals_inline_and_is_satisfied(kind):
    config = post_config(kind, "2KiB")
    proofs = [generate_sector_proof(config, RND, 7)]  # WindowPoSt pads the second sector
    cc = compile_post(config)
    r1cs = cc.to_r1cs()
    cs = _inline(config, proofs)
    inline = cs.r1cs()
    for m in "abc":
        x, y = getattr(r1cs, m), getattr(inline, m)
        assert np.array_equal(x.indptr, y.indptr)
        assert np.array_equal(x.indices, y.indices)
        assert np.array_equal(x.coeffs, y.coeffs)
    w = witness(cc, config, proofs)
    assignment = fr_from_array(w)
    assert assignment == cs.assignment()
    pub = public_inputs(config, RND, [(p.sector_id, p.comm_r) for p in proofs])
    assert assignment[1 : cc.num_inputs] == pub
    assert r1cs.is_satisfied(assignment)
    bad = list(assignment)
    bad[1] = (bad[1] + 1) % R  # claim another comm_r
    assert not r1cs.is_satisfied(bad)


def test_limb_backend_witness_equals_object_backend():
    config = post_config(WINDOW, "2KiB")
    cc = compile_post(config)
    proofs = [generate_sector_proof(config, RND, 9, seed=1)]
    config1 = dataclasses.replace(config, challenge_count=1)
    proofs1 = [
        dataclasses.replace(
            p,
            sectors=(
                dataclasses.replace(
                    p.sectors[0], inclusion_proofs=p.sectors[0].inclusion_proofs[:1]
                ),
            ),
        )
        for p in proofs
    ]
    cc1 = compile_post(config1)
    a = witness(cc1, config1, proofs1)
    b = witness(cc1, config1, proofs1, F=limb_fr(np))
    assert np.array_equal(a, b)
    assert cc1.to_r1cs().is_satisfied(fr_from_array(a))
    assert cc.num_constraints > cc1.num_constraints


def test_32gib_counts():
    winning = compile_post(post_config(WINNING, "32GiB"))
    # 66 slots × (header 313 + 1 × (10 levels × 530 + 2)); inputs ONE + 66 × (comm_r, leaf).
    # rust-fil-proofs' circuitinfo: 370,590 constraints, 133 public inputs (ONE counted).
    assert winning.copies == 66
    assert winning.num_circuit_constraints == 66 * (313 + 5302) == 370_590
    assert winning.num_inputs == 133
    assert winning.num_constraints == 370_723
    window = compile_post(post_config(WINDOW, "32GiB"))
    # rust-fil-proofs quotes 125,279,217 constraints for 2349 sectors.
    assert window.num_circuit_constraints == 2349 * 53_333 == 125_279_217
    assert window.num_inputs == 1 + 2349 * 11
    assert window.num_constraints == 125_305_057
    assert window.domain_size == 1 << 27


def test_fixture_sector_satisfies_its_part_of_the_window_post_circuit():
    proof = read_sector_proof((DATA / "post.vproof").read_bytes())
    config = config_for_registered_proof(8)
    part = single_sector_config(config)
    cc = compile_post(part)
    full = compile_post(config)
    # The partition is this part repeated: same template, 2349 copies.
    assert full.top is not None and full.top.key == cc.top.key
    assert full.num_circuit_constraints == config.sector_count * cc.num_circuit_constraints
    w = witness(cc, part, [proof])
    assignment = fr_from_array(w)
    pub = public_inputs(part, bytes(32), [(proof.sector_id, proof.comm_r)])
    assert assignment[1 : cc.num_inputs] == pub
    r1cs = cc.to_r1cs()
    assert r1cs.num_constraints == 53_333 + 12
    assert r1cs.is_satisfied(assignment)
    bad = list(assignment)
    bad[5] = (bad[5] + 1) % R  # another challenged leaf index
    assert not r1cs.is_satisfied(bad)


@pytest.mark.slow
def test_winning_post_32gib_end_to_end(circuit_cache):
    config = post_config(WINNING, "32GiB")
    cc = load_or_compile(config.circuit_id, lambda: compile_post(config), circuit_cache)
    r1cs = load_or_build_r1cs(cc, circuit_cache)
    assert r1cs.num_constraints == 370_723
    proof = generate_sector_proof(config, RND, 1234)
    w = witness(cc, config, [proof])
    assignment = fr_from_array(w)
    assert assignment[1:133] == public_inputs(config, RND, [(1234, proof.comm_r)])
    assert r1cs.is_satisfied(assignment)
    # Second load comes from the cache: a compile here would return None and fail.
    again = load_or_build_r1cs(
        load_or_compile(config.circuit_id, lambda: None, circuit_cache), circuit_cache
    )
    assert np.array_equal(again.a.indices, r1cs.a.indices)


# a.len() of the WinningPoSt circuit per sector size: 66 × (313 + one inclusion
# proof) constraints plus 133 input constraints.
WINNING_COUNTS = {
    "2KiB": 90_883,
    "4KiB": 111_607,
    "16KiB": 125_863,
    "32KiB": 146_587,
    "8MiB": 230_803,
    "16MiB": 251_527,
    "512MiB": 300_763,
    "1GiB": 321_487,
    "32GiB": 370_723,
    "64GiB": 391_447,
}


@pytest.mark.parametrize("size", sorted(WINNING_COUNTS))
def test_winning_post_counts_all_sizes(size):
    config = post_config(WINNING, size)
    assert (config.circuit_sector_count, config.circuit_challenge_count) == (66, 1)
    cc = compile_post(config)
    assert cc.num_inputs == 133
    assert cc.num_constraints == WINNING_COUNTS[size]


def test_winning_post_slots_are_the_sector_repeated_with_challenge_i():
    config = post_config(WINNING, "2KiB")
    proof = generate_sector_proof(config, RND, 77)
    pub = public_inputs(config, RND, [(77, proof.comm_r)])
    assert len(pub) == 132
    # Slot i: the sector's comm_r, then the leaf of its vanilla challenge i.
    assert pub[0::2] == [proof.comm_r] * 66
    assert pub[1::2] == sector_leaf_challenges(config, RND, 77)
    slots = slot_hints(config, proof)
    assert len(slots) == 66 and all(len(pors) == 1 for _, pors in slots)
    assert {h for h, _ in slots} == {
        (proof.sectors[0].comm_r_last, proof.sectors[0].comm_c, proof.comm_r)
    }
    with pytest.raises(InputError, match="WinningPoSt proves exactly 1"):
        public_inputs(config, RND, [(77, proof.comm_r)] * 2)
    with pytest.raises(InputError, match="no sectors"):
        witness(compile_post(config), config, [])


def test_per_copy_matrices_give_the_partition_products():
    from cuzk.errors import ResourceError
    from cuzk.synthesis.compile import matvec_by_copies

    config = post_config(WINDOW, "2KiB")
    cc = compile_post(config)
    proofs = [generate_sector_proof(config, RND, 5 + i, i) for i in range(2)]
    w = fr_from_array(witness(cc, config, proofs))
    full = cc.to_r1cs()
    copy = cc.copy_r1cs()
    assert copy.num_constraints * 2 + cc.num_inputs == full.num_constraints
    got = matvec_by_copies(cc, copy, w)
    assert list(got) == [m.matvec(w) for m in (full.a, full.b, full.c)]
    window = compile_post(post_config(WINDOW, "32GiB"))
    assert window.csr_bytes > 40 * 2**30
    with pytest.raises(ResourceError, match="GiB"):
        window.to_r1cs(limit_bytes=8 * 2**30)
