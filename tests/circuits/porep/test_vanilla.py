"""The vanilla verifier on really sealed and synthetic sectors, and tampering."""

from __future__ import annotations

import dataclasses
import random

import pytest

from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.synthetic import generate_c1
from cuzk.circuits.porep.types import PathElement
from cuzk.circuits.porep.vanilla import Verifier, verify_c1
from cuzk.errors import InputError


def test_sealed_2kib_verifies(sealed_2kib):
    sealed, c1 = sealed_2kib
    verify_c1(c1)
    assert c1.comm_r == sealed.comm_r and c1.comm_d == sealed.comm_d
    assert len(c1.partitions) == 1 and len(c1.partitions[0]) == 2


@pytest.mark.parametrize("name", ["StackedDrg2KiBV1", "StackedDrg8MiBV1_1", "StackedDrg512MiBV1_1"])
def test_synthetic_small_sectors_verify(name):
    verify_c1(generate_c1(REGISTERED_SEAL_PROOFS[name], random.Random(7)))


@pytest.mark.slow
def test_synthetic_32gib_partition_verifies():
    p = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1"]
    c1 = generate_c1(p, random.Random(8), partitions=[9])
    assert [len(x) for x in c1.partitions] == [0] * 9 + [18]
    Verifier(p).verify(c1, partitions=[9])
    with pytest.raises(InputError, match="expected 18 challenge proofs"):
        Verifier(p).verify(c1)


def _flip(b: bytes) -> bytes:
    return bytes([b[0] ^ 1]) + b[1:]


def _replace_proof(c1, i, proof):
    part = list(c1.partitions[0])
    part[i] = proof
    return dataclasses.replace(c1, partitions=(tuple(part),))


def _tampered(c1, what):
    p = c1.partitions[0][1]
    rc = p.replica_column_proofs
    if what == "drg parent label":
        cp = rc.drg_parents[2]
        rows = list(cp.column.rows)
        rows[0] = _flip(rows[0])
        cp = dataclasses.replace(cp, column=dataclasses.replace(cp.column, rows=tuple(rows)))
        rc = dataclasses.replace(rc, drg_parents=(*rc.drg_parents[:2], cp, *rc.drg_parents[3:]))
        return _replace_proof(c1, 1, dataclasses.replace(p, replica_column_proofs=rc))
    if what == "challenge label":
        rows = list(rc.c_x.column.rows)
        rows[-1] = _flip(rows[-1])
        c_x = dataclasses.replace(
            rc.c_x, column=dataclasses.replace(rc.c_x.column, rows=tuple(rows))
        )
        return _replace_proof(
            c1, 1, dataclasses.replace(p, replica_column_proofs=dataclasses.replace(rc, c_x=c_x))
        )
    if what == "tree R path element":
        mp = p.comm_r_last_proof
        e = mp.base[1]
        e = PathElement((_flip(e.hashes[0]), *e.hashes[1:]), e.index)
        mp = dataclasses.replace(mp, base=(mp.base[0], e, *mp.base[2:]))
        return _replace_proof(c1, 1, dataclasses.replace(p, comm_r_last_proof=mp))
    if what == "tree D data leaf":
        mp = dataclasses.replace(p.comm_d_proofs, leaf=_flip(p.comm_d_proofs.leaf))
        return _replace_proof(c1, 1, dataclasses.replace(p, comm_d_proofs=mp))
    if what == "labeling proof parent":
        lp = p.labeling_proofs[0]
        lp = dataclasses.replace(lp, parents=(_flip(lp.parents[0]), *lp.parents[1:]))
        return _replace_proof(
            c1, 1, dataclasses.replace(p, labeling_proofs=(lp, *p.labeling_proofs[1:]))
        )
    raise AssertionError(what)


@pytest.mark.parametrize(
    ("what", "field"),
    [
        ("drg parent label", "replica_column_proofs.drg_parents[2].inclusion_proof"),
        ("challenge label", "replica_column_proofs.c_x.inclusion_proof"),
        ("tree R path element", "comm_r_last_proof"),
        ("tree D data leaf", "comm_d_proofs"),
        ("labeling proof parent", "labeling_proofs[0].parents[0]"),
    ],
)
def test_tampering_fails_with_the_json_path(sealed_2kib, what, field):
    _, c1 = sealed_2kib
    with pytest.raises(InputError) as e:
        verify_c1(_tampered(c1, what), "c1.json")
    assert e.value.field == f"vanilla_proofs.StackedDrg2KiBV1[0][1].{field}"


def test_wrong_seed_fails(sealed_2kib):
    _, c1 = sealed_2kib
    with pytest.raises(InputError, match="opens leaf"):
        verify_c1(dataclasses.replace(c1, seed=_flip(c1.seed)))


def test_wrong_comm_r_fails(sealed_2kib):
    _, c1 = sealed_2kib
    with pytest.raises(InputError) as e:
        verify_c1(dataclasses.replace(c1, comm_r=_flip(c1.comm_r)))
    assert e.value.field == "comm_r"
