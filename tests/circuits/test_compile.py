"""Compile-once equals inline synthesis: same matrices, same variable order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import Boolean
from cuzk.gadgets.insertion import pick
from cuzk.gadgets.merkle import POSEIDON, por_subcircuit, stack_por_hints
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import NUM, Subcircuit, call
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.field import OBJECT_FR, limb_fr
from cuzk.hashers.merkle import TreeShape, sparse_poseidon_tree
from cuzk.r1cs import ConstraintSystem
from cuzk.synthesis.cache import load_compiled, load_r1cs, save_compiled, save_r1cs
from cuzk.synthesis.compile import compile_circuit
from cuzk.synthesis.witness import LaneCS

SHAPE = TreeShape(8, 2)
ARITIES = tuple(SHAPE.arities(128))


def _toy(cs, ports, hints, proofs: int = 3):
    """A root, inclusion proofs under it, and an input."""
    root = AllocatedNum.alloc(cs, None if hints is None else hints[0], "root")
    for i in range(proofs):
        call(cs, por_subcircuit(POSEIDON, ARITIES), [root], None if hints is None else hints[1][i])
    root.inputize(cs)
    return []


TOY = Subcircuit("test/toy", (), _toy)


def _same_matrices(r1, r2) -> None:
    assert (r1.num_inputs, r1.num_aux, r1.num_constraints) == (
        r2.num_inputs,
        r2.num_aux,
        r2.num_constraints,
    )
    for m in "abc":
        x, y = getattr(r1, m), getattr(r2, m)
        assert np.array_equal(x.indptr, y.indptr), m
        assert np.array_equal(x.indices, y.indices), m
        assert np.array_equal(x.coeffs, y.coeffs), m


def _scalar_hints(rng: random.Random) -> tuple:
    chal = [rng.randrange(128) for _ in range(3)]
    tree = sparse_poseidon_tree(chal, 128, SHAPE, rng)
    pors = [(tree.leaves[c], [(el.index, list(el.hashes)) for el in tree.paths[c]]) for c in chal]
    return tree.root, pors


def test_compiled_matches_inline_and_counts():
    cc = compile_circuit("toy", TOY, copies=3)
    cs = ConstraintSystem(witness=False, keep_names=False)
    for _ in range(3):
        _toy(cs, [], None)
    inline = cs.r1cs()
    _same_matrices(cc.to_r1cs(), inline)
    assert cc.num_constraints == inline.num_constraints
    assert cc.nnz == (inline.a.nnz, inline.b.nnz, inline.c.nnz)
    assert cc.domain_size == 1 << (inline.num_constraints - 1).bit_length()
    assert {t.key for t in cc.templates()} >= {"poseidon/8", "merkle-level/poseidon/8"}


def _query_sizes_of(r1cs) -> tuple[int, int]:
    return r1cs.num_inputs + int(r1cs.a_aux_density().sum()), int(r1cs.b.column_mask().sum())


def test_query_sizes_without_the_matrices():
    """The key's a and b query sizes from the templates equal the prover's
    selections on the materialised matrices (ports bound through calls,
    aliased ports, inputs, copies)."""
    for cc in (
        compile_circuit("toy", TOY, copies=3),
        compile_circuit("alias", Subcircuit("test/alias", (), _aliased), copies=2),
    ):
        assert cc.query_sizes() == _query_sizes_of(cc.to_r1cs())


@pytest.mark.parametrize("kind", ["winning-post", "porep"])
def test_query_sizes_of_filecoin_circuits(kind, circuit_cache):
    from cuzk.circuits.catalog import compiled_circuit
    from cuzk.synthesis.cache import load_or_build_r1cs

    cc = compiled_circuit(kind, "2KiB", circuit_cache, True)
    assert cc.query_sizes() == _query_sizes_of(load_or_build_r1cs(cc, circuit_cache))


@pytest.mark.parametrize("backend,proofs", [("object", 3), ("limb", 1)])
def test_lane_witness_matches_scalar_witness(backend, proofs):
    rng = random.Random(7)
    lanes = [_scalar_hints(rng) for _ in range(3)]
    cs = ConstraintSystem(keep_names=False)
    for h in lanes:
        _toy(cs, [], h, proofs)
    expected = cs.assignment()
    if proofs == 3:
        cc = compile_circuit("toy", TOY, copies=3)
        assert cc.to_r1cs().is_satisfied(expected)
    F = OBJECT_FR if backend == "object" else limb_fr(np)
    V = LaneValues(3, F)
    hints = (
        F.from_ints([h[0] for h in lanes]),
        [stack_por_hints(V, [h[1][i] for h in lanes]) for i in range(proofs)],
    )
    lcs = LaneCS(V)
    _toy(lcs, [], hints, proofs)
    # Lane-major values: lane i's inputs, then all lanes' aux, lane by lane.
    inputs = lcs.input_values()
    aux = lcs.aux_values()
    got = [1, *fr_from_array(inputs.reshape(-1, 4)), *fr_from_array(aux.reshape(-1, 4))]
    assert got == expected


def _aliased(cs, ports, hints):
    """A subcircuit called with the same variable on two ports."""
    a = AllocatedNum.alloc(cs, None if hints is None else hints[0])
    b = AllocatedNum.alloc(cs, None if hints is None else hints[1])
    sub = Subcircuit(
        "test/pick2", (NUM, NUM), lambda cs, p, h: [pick(cs, Boolean.constant(True), p[0], p[1])]
    )
    call(cs, sub, [a, a])
    call(cs, sub, [a, b])
    return []


def test_aliased_ports_merge_like_a_linear_combination():
    cc = compile_circuit("alias", Subcircuit("test/alias", (), _aliased), copies=2)
    cs = ConstraintSystem(witness=False, keep_names=False)
    for _ in range(2):
        _aliased(cs, [], None)
    _same_matrices(cc.to_r1cs(), cs.r1cs())


def test_cache_round_trip(tmp_path):
    cc = compile_circuit("toy", TOY, copies=2)
    save_compiled(cc, tmp_path / "toy.npz")
    back = load_compiled(tmp_path / "toy.npz")
    assert (back.num_constraints, back.num_aux, back.num_inputs, back.nnz) == (
        cc.num_constraints,
        cc.num_aux,
        cc.num_inputs,
        cc.nnz,
    )
    r1 = cc.to_r1cs()
    _same_matrices(back.to_r1cs(), r1)
    save_r1cs(r1, tmp_path / "toy-r1cs.npz")
    mapped = load_r1cs(tmp_path / "toy-r1cs.npz")
    _same_matrices(mapped, r1)
    _same_matrices(load_r1cs(tmp_path / "toy-r1cs.npz", mmap=False), r1)
    # mapped from the file, read-only: page cache, not the process's memory
    for m in (mapped.a, mapped.b, mapped.c):
        for arr in (m.indptr, m.indices, m.coeffs):
            assert isinstance(arr, np.memmap) and not arr.flags.writeable


def test_mapped_npz_members_past_zip64_headers(tmp_path):
    """Members written with zip64 local headers (as files over 4 GiB have), and
    compressed ones, load to the same arrays."""
    import zipfile

    from cuzk.synthesis.cache import _MappedNpz

    rng = np.random.default_rng(5)
    arrays = {
        "x": rng.integers(0, 2**63, size=(1000, 4), dtype=np.uint64),
        "f": np.asfortranarray(rng.integers(0, 9, size=(7, 5))),
        "e": np.zeros((0, 4), dtype=np.uint64),
    }
    path = tmp_path / "z.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, a in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, a)
    with (
        zipfile.ZipFile(tmp_path / "c.npz", "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("c.npy", "w") as f,
    ):
        np.lib.format.write_array(f, arrays["x"])
    with _MappedNpz(path) as z:
        for name, a in arrays.items():
            got = z[name]
            assert got.dtype == a.dtype and np.array_equal(got, a), name
        assert isinstance(z["x"], np.memmap)
    with _MappedNpz(tmp_path / "c.npz") as z:
        assert np.array_equal(z["c"], arrays["x"])


def test_unsatisfied_when_a_sibling_is_wrong():
    rng = random.Random(9)
    root, pors = _scalar_hints(rng)
    leaf, levels = pors[1]
    idx, sibs = levels[0]
    levels = [(idx, [(sibs[0] + 1) % R, *sibs[1:]]), *levels[1:]]
    pors = [pors[0], (leaf, levels), pors[2]]
    cs = ConstraintSystem(keep_names=False)
    _toy(cs, [], (root, pors))
    cc = compile_circuit("toy", TOY, copies=1)
    assert not cc.to_r1cs().is_satisfied(cs.assignment())


def test_r1cs_build_bytes_until_the_matrices_are_cached(tmp_path):
    from cuzk.synthesis.cache import load_or_build_r1cs, r1cs_build_bytes

    cc = compile_circuit("toy", TOY, copies=3)
    rows = cc.num_constraints + 1
    largest = max(13 * z + 16 * rows for z in cc.nnz)
    assert r1cs_build_bytes(cc, tmp_path) == largest * 5 // 4 + (1 << 30)
    r1 = load_or_build_r1cs(cc, tmp_path)
    assert r1cs_build_bytes(cc, tmp_path) == 0  # mapped from the cache from now on
    assert isinstance(r1.a.indices, np.memmap)


@pytest.mark.parametrize("name", ["toy", "alias"])
def test_matrices_are_written_one_at_a_time(name, tmp_path, monkeypatch):
    """write_r1cs streams each matrix (its instances in small runs, its
    coefficients in slices) and gives the matrices the whole build gives;
    the aliased circuit's repeated columns are merged on the way."""
    import tracemalloc

    from cuzk.synthesis import cache, compile

    top = TOY if name == "toy" else Subcircuit("test/alias", (), _aliased)
    copies = 400 if name == "toy" else 50
    cc = compile_circuit(name, top, copies=copies)
    whole = cc.to_r1cs()
    monkeypatch.setattr(compile, "_BUILD_ENTRIES", 1 << 10)
    monkeypatch.setattr(cache, "_COEFF_CHUNK", 1 << 9)
    tracemalloc.start()
    try:
        cache.write_r1cs(cc, tmp_path / "m.npz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _same_matrices(load_r1cs(tmp_path / "m.npz"), whole)
    # one matrix's parts at a time, not the three matrices with their coefficients
    if name == "toy":
        assert peak < cc.csr_bytes / 2, (peak, cc.csr_bytes)
