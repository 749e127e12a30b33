"""The witness kernels (kernels/witness.cu) against their CPU twins, on the GPU
or on the kernels' CPU emulation: SHA-256 compressions and Poseidon hashes
against cuzk.hashers, random witness programs against the numpy interpreter
and the CPU plan, and whole PoRep partitions against the CPU witness."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_targets import to_numpy

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cuda.loader import KERNEL_DIR
from cuzk.hashers.poseidon import hash_ints
from cuzk.hashers.poseidon_constants import flat_table, poseidon_constants
from cuzk.hashers.sha256 import compress
from cuzk.synthesis.program import Op
from cuzk.synthesis.program_numpy import NumpyWitness

sys.path.insert(0, str(Path(__file__).parents[2] / "circuits"))
from random_witness import random_case


def test_instruction_numbers_match_the_kernel():
    """witness.cu's enum and cuzk.synthesis.program.Op name the same numbers."""
    text = (KERNEL_DIR / "witness.cu").read_text()
    kernel = {name: int(v) for name, v in re.findall(r"OP_(\w+) = (\d+),", text)}
    assert kernel == {op.name: int(op) for op in Op}


@pytest.fixture(scope="module")
def device(target):
    from cuzk.backends.cuda.witness import CudaWitness

    return CudaWitness()


def test_sha256_compressions_match_the_hasher(device):
    rng = np.random.default_rng(5)
    n = 97
    state = rng.integers(0, 1 << 32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
    block = rng.integers(0, 1 << 32, size=(n, 16), dtype=np.uint64).astype(np.uint32)
    block[0] = 0
    block[1] = 0xFFFFFFFF
    got = device.sha256_compress(state, block)
    with np.errstate(over="ignore"):
        want = compress(np, [state[:, i] for i in range(8)], [block[:, i] for i in range(16)])
    assert np.array_equal(got, np.stack(want, axis=1))


@pytest.mark.parametrize(
    "constants",
    [
        poseidon_constants(2),
        poseidon_constants(4),
        poseidon_constants(8),
        poseidon_constants(11),
        poseidon_constants(2).with_tag(12345 << 70),  # SnapDeals' custom domain tag
    ],
    ids=["2", "4", "8", "11", "2-tagged"],
)
def test_poseidon_hashes_match_the_hasher(device, constants):
    rng = random.Random(constants.arity)
    n = 23
    pre = [
        [rng.choice([0, 1, R - 1, rng.randrange(R)]) for _ in range(constants.arity)]
        for _ in range(n)
    ]
    (t, half, partial), values = flat_table(constants)
    head = np.array([0, t, half, partial], dtype=np.uint32)
    arr = fr_to_array([x for row in pre for x in row]).reshape(n, constants.arity, 4)
    got = fr_from_array(device.poseidon_hash(arr, head, values))
    assert got == [hash_ints(row, constants) for row in pre]


def test_random_programs_match_the_numpy_interpreter_and_the_cpu_plan(device):
    rng = random.Random(29)
    for seed in range(4):
        sp, hints, want = random_case(rng, 100 + seed)
        W_device = sp.run(device, hints)
        assert np.array_equal(to_numpy(W_device), want), f"seed {seed}"
        device.free(W_device)
        assert np.array_equal(sp.run(NumpyWitness(), hints), want)


def partition_case(kind: str, size: str):
    """(static plan, hints, the CPU witness) of one partition of a kind."""
    from cuzk.synthesis.compile import Compiler

    compiler = Compiler()
    if kind == "porep":
        from cuzk.circuits.porep.circuit import PoRepShape
        from cuzk.circuits.porep.params import default_proof, parse_size
        from cuzk.circuits.porep.synthetic import generate_c1
        from cuzk.circuits.porep.witness import (
            compile_partition,
            partition_hints,
            partition_witness,
            static_plan,
        )

        pt = default_proof(parse_size(size))
        c1 = generate_c1(pt, random.Random(len(size)))
        shape = PoRepShape.of(pt.sector)
        cc = compile_partition(shape, compiler)
        hints = partition_hints(c1, 0)
        want = partition_witness(cc, shape, hints, compiler).W
        return static_plan(cc, shape, hints, compiler), hints, want
    if kind == "snap":
        from cuzk.circuits.update import witness as snap
        from cuzk.circuits.update.generate import generate_sector
        from cuzk.circuits.update.params import UpdateParams

        p = UpdateParams.of(size)
        sector = generate_sector(p, random.Random(len(size)))
        k = p.partition_count - 1
        roots = (sector.comm_r_old, sector.comm_d_new, sector.comm_r_new)
        hints = snap.partition_hints(p, sector.partition_proof(k), k, sector.h, *roots)
        cc = snap.compile_partition(p, compiler)
        want = snap.partition_witness(cc, p, hints, compiler).W
        return snap.static_plan(cc, p, hints, compiler), hints, want
    from cuzk.circuits.post.circuit import compile_post, witness
    from cuzk.circuits.post.config import post_config
    from cuzk.circuits.post.device_witness import slot_hint_arrays, static_plan
    from cuzk.circuits.post.generate import generate_sector_proof

    config = post_config(kind, size)
    proofs = [generate_sector_proof(config, bytes(range(32)), 7)]
    cc = compile_post(config)
    hints = slot_hint_arrays(config, proofs)
    return static_plan(cc, config, hints), hints, witness(cc, config, proofs)


@pytest.mark.parametrize(
    ("kind", "size"),
    [
        ("porep", "2KiB"),
        ("porep", "8MiB"),
        ("snap", "2KiB"),
        ("snap", "8MiB"),
        ("window-post", "2KiB"),
        ("window-post", "8MiB"),
        ("winning-post", "8MiB"),
    ],
)
def test_partition_witness_on_the_device_equals_the_cpu_witness(device, kind, size):
    """A whole partition: recorded once, run pass by pass by the interpreter
    kernel, bit for bit the CPU witness (PoRep, SnapDeals, PoSt)."""
    plan, hints, want = partition_case(kind, size)
    W_device = plan.run(device, hints)
    W = to_numpy(W_device)
    assert W.shape == want.shape
    assert np.array_equal(W, want)
    # the assignment's VRAM (and its hints') is held until it is freed
    budget = device.ctx.budget
    before = budget.reserved_bytes
    device.free(W_device)
    assert before - budget.reserved_bytes == 32 * (len(W) + len(plan.hint_kinds) * plan.copies)
