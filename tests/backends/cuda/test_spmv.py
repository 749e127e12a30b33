"""Sparse matrix-vector products on the GPU against the CPU backend."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from cuda_targets import to_numpy

from cuzk.algebra.arrays import fr_random, fr_to_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix


@pytest.fixture(scope="module", params=["warp", "seg"])
def engine(backend, request):
    """A sparse engine with each kernel, on the backend's device."""
    from cuzk.backends.cuda.spmv import SpmvEngine

    return SpmvEngine(backend.ctx, backend.fr, kernel=request.param)


def product(engine, m: SparseMatrix, w) -> np.ndarray:
    import cupy

    return np.asarray(cupy.asnumpy(engine.matvec(engine.upload(m), w)))


def random_matrix(rng, nrows: int, ncols: int, distinct: int) -> SparseMatrix:
    """Empty, short and long rows (past the one-warp-per-row threshold)."""
    lengths = rng.choice(
        [0, 1, 2, 3, 6, 17, 40, 130], size=nrows, p=[0.1, 0.3, 0.2, 0.15, 0.1, 0.08, 0.05, 0.02]
    )
    pool = [1, R - 1, 2, 0, R - 2] + [int(v) for v in rng.integers(0, 2**63, size=distinct)]
    rows = [
        [(int(rng.integers(0, ncols)), pool[int(rng.integers(0, len(pool)))]) for _ in range(k)]
        for k in lengths
    ]
    return SparseMatrix.from_rows(rows, ncols)


@pytest.mark.parametrize("distinct", [0, 300])
def test_spmv_matches_cpu(backend, cpu, distinct):
    from cuzk.backends.cuda.spmv import CODE16

    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 400, 300, distinct)
    w = fr_random(300, rng)
    w[:3] = fr_to_array([0, 1, R - 1])
    w[3] = np.frombuffer(((1 << 256) - 1).to_bytes(32, "little"), dtype="<u8")  # non-canonical
    got = backend.to_host(backend.spmv(m, w))
    assert np.array_equal(got, cpu.spmv(m, w)), f"seed {seed}"
    assert backend.spmv_engine.upload(m).mode == CODE16


@pytest.mark.gpu
def test_spmv_32_bit_codes(backend, cpu, target):
    """More than 2^16 distinct coefficients, each used three times (resident and
    streamed)."""
    from cuzk.backends.cuda.spmv import CODE32, SpmvEngine

    if target != "gpu":
        pytest.skip("the 32-bit code dictionary is exercised on the GPU only")
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    nrows, ncols, distinct = 60_000, 5000, 70_000
    lengths = rng.integers(0, 8, nrows)
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    nnz = int(indptr[-1])
    values = fr_random(distinct, rng)
    coeffs = values[rng.integers(0, distinct, nnz)]
    m = SparseMatrix(indptr, rng.integers(0, ncols, nnz).astype(np.int64), coeffs, ncols)
    w = fr_random(ncols, rng)
    want = cpu.spmv(m, w)
    assert np.array_equal(backend.to_host(backend.spmv(m, w)), want), f"seed {seed}"
    assert backend.spmv_engine.upload(m).mode == CODE32
    engine = SpmvEngine(backend.ctx, backend.fr, block_entries=1 << 15)  # some blocks
    streamed = engine.from_arrays(m.indptr, m.indices, m.coeffs, ncols, resident=False)
    try:
        assert streamed.mode == CODE32
        got = backend.to_host(engine.matvec(streamed, w))
        assert np.array_equal(got, want), f"streamed, seed {seed}"
    finally:
        streamed.close()


def test_spmv_raw_coefficients(backend, cpu):
    """All-distinct coefficients: stored in full."""
    from cuzk.backends.cuda.spmv import RAW

    rng = np.random.default_rng(secrets.randbits(32))
    m = random_matrix(rng, 200, 100, 0)
    m = SparseMatrix(m.indptr, m.indices, fr_random(m.nnz, rng), m.num_cols)
    w = fr_random(100, rng)
    assert np.array_equal(backend.to_host(backend.spmv(m, w)), cpu.spmv(m, w))
    assert backend.spmv_engine.upload(m).mode == RAW


def test_spmv_empty_and_errors(backend, cpu):
    empty = SparseMatrix.from_rows([[], [], []], 5)
    w = fr_random(5, np.random.default_rng(1))
    assert np.array_equal(backend.to_host(backend.spmv(empty, w)), cpu.spmv(empty, w))
    with pytest.raises(ValueError, match="columns"):
        backend.spmv(empty, fr_random(4, np.random.default_rng(1)))


def test_matrix_stays_resident_and_is_released(backend):
    import gc

    rng = np.random.default_rng(3)
    m = random_matrix(rng, 100, 50, 5)
    budget = backend.ctx.budget
    gc.collect()  # matrices of earlier tests release their share first
    before = budget.reserved_bytes
    dev = backend.spmv_engine.upload(m)
    assert backend.spmv_engine.upload(m) is dev
    assert budget.reserved_bytes == before + dev.nbytes
    del m, dev
    gc.collect()
    assert budget.reserved_bytes == before


def test_prepared_matrix_is_the_owners_and_close_gives_it_back(backend, cpu):
    """A key's matrices (prepare_matrix) bypass the per-matrix cache: the same
    products, and close() returns every byte of the budget at once."""
    rng = np.random.default_rng(secrets.randbits(32))
    m = random_matrix(rng, 300, 80, 7)
    w = fr_random(80, rng)
    budget = backend.ctx.budget
    before = budget.reserved_bytes
    dev = backend.prepare_matrix(m)
    assert budget.reserved_bytes > before
    assert np.array_equal(backend.to_host(backend.spmv(dev, w)), cpu.spmv(m, w))
    dev.close()
    assert budget.reserved_bytes == before


def test_long_rows_at_warp_edges(backend, cpu):
    """Long rows first in a warp, adjacent, last, and a partial last warp."""
    rng = np.random.default_rng(secrets.randbits(32))
    pattern = [40, 45, 1, 0, 33, 2] + [3] * 25 + [70] + [50, 0, 1, 36, 36, 2, 5]
    rows = [[(int(rng.integers(0, 64)), secrets.randbelow(R)) for _ in range(k)] for k in pattern]
    m = SparseMatrix.from_rows(rows, 64)
    w = fr_random(64, rng)
    assert np.array_equal(backend.to_host(backend.spmv(m, w)), cpu.spmv(m, w))


def weird_w(rng, ncols: int) -> np.ndarray:
    """Witness values with 0, 1, r - 1 and non-canonical ones up to 2^256 - 1."""
    w = fr_random(ncols, rng)
    w[:3] = fr_to_array([0, 1, R - 1])
    top = np.frombuffer(((1 << 256) - 1).to_bytes(32, "little"), dtype="<u8")
    w[3] = top
    w[ncols // 2 :: 7] = top  # many in long rows: the unreduced sums get large
    return w


@pytest.mark.parametrize("distinct", [0, 300])
def test_kernels_match_cpu(engine, cpu, distinct):
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 700, 300, distinct)
    w = weird_w(rng, 300)
    assert np.array_equal(product(engine, m, w), cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"


def test_kernels_raw_coefficients(engine, cpu):
    from cuzk.backends.cuda.spmv import RAW

    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 300, 100, 0)
    m = SparseMatrix(m.indptr, m.indices, fr_random(m.nnz, rng), m.num_cols)
    w = weird_w(rng, 100)
    assert np.array_equal(product(engine, m, w), cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"
    assert engine.upload(m).mode == RAW


def test_kernels_row_groups(engine, cpu):
    """Empty groups and parts, a row longer than a whole step of the warp,
    long runs of equal rows across lanes, and a partial last group."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    ncols = 80
    pattern = [0] * 300 + [1, 2, 0, 700, 3] + [0] * 40 + [5] * 60 + [260, 1, 1] + [0] * 250
    pattern += [int(k) for k in rng.choice([0, 1, 2, 9, 33], size=520)] + [4, 0, 129]
    coeffs = [1, 1, 1, R - 1, 2, 1 << 200, R - 5]
    rows = [
        [(int(rng.integers(0, ncols)), coeffs[int(rng.integers(0, len(coeffs)))]) for _ in range(k)]
        for k in pattern
    ]
    m = SparseMatrix.from_rows(rows, ncols)
    w = weird_w(rng, ncols)
    assert np.array_equal(product(engine, m, w), cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"


def test_kernels_one_long_row_of_ones(engine, cpu):
    """Every entry coefficient 1 and w = 2^256 - 1: the largest unreduced sum."""
    ncols = 64
    top = np.frombuffer(((1 << 256) - 1).to_bytes(32, "little"), dtype="<u8")
    w = np.tile(top, (ncols, 1))
    rows = [[(j % ncols, 1) for j in range(3000)], [(0, 1)], []]
    m = SparseMatrix.from_rows(rows, ncols)
    assert np.array_equal(product(engine, m, w), cpu.spmv(m, w))


def test_seg_final_reduction(backend, target):
    """x mod r for 9-word sums up to the kernel's bound 2^286, edge values included."""
    import cupy

    from cuzk.algebra.arrays import fr_from_array

    rng = np.random.default_rng(secrets.randbits(32))
    values = [0, 1, R - 1, R, R + 1, 2 * R - 1, 2 * R, 3 * R - 1, (1 << 256) - 1, 1 << 256]
    values += [(1 << 286) - 1, (1 << 286) - 1 - ((1 << 286) - 1) % R, ((1 << 286) // R) * R - 1]
    values += [k * R + d for k in (7, 1 << 20, (1 << 30) - 3) for d in (0, 1, R - 1)]
    values += [int.from_bytes(rng.bytes(36), "little") >> (288 - b) for b in (257, 270, 286) * 20]
    assert all(v < 1 << 286 for v in values)
    words = np.array(
        [[(v >> (32 * k)) & 0xFFFFFFFF for k in range(9)] for v in values], dtype=np.uint32
    ).ravel()
    module = backend.spmv_engine.module
    out = cupy.empty((len(values), 4), dtype=cupy.uint64)
    x = cupy.asarray(words)
    module.get_function("spmv_acc_reduce_kernel")((1,), (64,), (out, x, np.uint64(len(values))))
    got = fr_from_array(np.asarray(cupy.asnumpy(out)))
    assert got == [v % R for v in values]


def test_unknown_kernel(backend):
    from cuzk.backends.cuda.spmv import SpmvEngine

    with pytest.raises(ValueError, match="sparse kernel"):
        SpmvEngine(backend.ctx, backend.fr, kernel="nope")


def _csr_arrays(dev) -> dict:
    names = ("row_ptr", "cols", "coeffs", "codes", "dictionary", "long_rows", "one_ptr", "one_cols")
    return {n: None if getattr(dev, n) is None else to_numpy(getattr(dev, n)) for n in names}


@pytest.mark.parametrize("chunk", [37, 300])
@pytest.mark.parametrize("distinct", ["few", "all"])
def test_chunked_upload_is_the_one_pass_upload(engine, cpu, chunk, distinct):
    """Uploads in chunks of any size give the same resident matrix, bit for bit,
    and the same products; coefficients need not be canonical (r + 1 is a one)."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 200, 120, 9)
    coeffs = m.coeffs.copy()
    if distinct == "all":
        coeffs = fr_random(m.nnz, rng)
    r_plus_1 = np.frombuffer((R + 1).to_bytes(32, "little"), dtype="<u8")
    coeffs[5::17] = r_plus_1
    m = SparseMatrix(m.indptr, m.indices, coeffs, m.num_cols)
    w = weird_w(rng, 120)
    budget = engine.ctx.budget
    before = budget.reserved_bytes
    whole = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    assert m.nnz > 2 * chunk
    default, engine.upload_chunk = engine.upload_chunk, chunk
    try:
        parts = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    finally:
        engine.upload_chunk = default
    assert parts.mode == whole.mode and parts.one_code == whole.one_code
    a, b = _csr_arrays(parts), _csr_arrays(whole)
    for name in a:
        assert (a[name] is None) == (b[name] is None), name
        if a[name] is not None:
            assert np.array_equal(a[name], b[name]), f"{name}, chunk {chunk}, seed {seed}"
    want = cpu.spmv(m, w)
    assert np.array_equal(to_numpy(engine.matvec(parts, w)), want), f"seed {seed}"
    # every byte the matrices hold was reserved, and close() gives it all back
    assert budget.reserved_bytes - before == parts.nbytes + whole.nbytes
    parts.close()
    whole.close()
    assert budget.reserved_bytes == before


@pytest.mark.parametrize("distinct", ["few", "all"])
def test_resident_bytes_estimate_covers_the_upload(engine, distinct):
    """What the engine reserves for a key's matrices (no GPU needed to compute it)
    covers what the upload really holds, and is not wildly above it."""
    from cuzk.backends.cuda.csr_bytes import (
        resident_bytes_estimate,
        resident_bytes_exact,
        upload_bytes,
    )

    rng = np.random.default_rng(secrets.randbits(32))
    m = random_matrix(rng, 400, 150, 5)
    if distinct == "all":
        m = SparseMatrix(m.indptr, m.indices, fr_random(m.nnz, rng), m.num_cols)
    else:  # non-canonical coefficients: r + 1 is a one, r + 2 the same as 2
        coeffs = m.coeffs.copy()
        coeffs[3::11] = fr_to_array([R + 1])[0]
        coeffs[7::13] = fr_to_array([R + 2])[0]
        m = SparseMatrix(m.indptr, m.indices, coeffs, m.num_cols)
    upload_op = f"CSR {m.num_rows} x {m.num_cols} upload"
    engine.ctx.budget.peak_by_operation.pop(upload_op, None)  # (earlier tests' matrices)
    dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    try:
        est = resident_bytes_estimate(m)
        assert dev.nbytes <= est
        # the conversion's temporaries, held beside the matrix while it is made
        # (the key's reservation counts them: CudaBackend.prepared_key_bytes)
        upload = engine.ctx.budget.peak_by_operation[upload_op]
        assert upload <= upload_bytes(m.num_rows, m.nnz, engine.upload_chunk)
        # the few-distinct estimate carries a 2 MiB dictionary allowance
        assert est <= dev.nbytes + 9 * m.nnz + 32 * (1 << 16) + 16 * (m.num_rows + 1)
        # the host's exact count is what the upload holds (the seg kernel's row ids
        # are made on its first product by the warp engine too)
        engine.prepare_seg(dev)
        assert resident_bytes_exact(m) == dev.nbytes
    finally:
        dev.close()


def test_coefficient_keys_tell_powers_of_two_apart():
    """The SHA-256 gadgets' bit packings put every power of two below 2^256 (and
    their negatives) in one matrix: each must get its own key, or the matrix
    is stored with full coefficients (seen on the 32GiB PoRep: 2^62 and 2^126
    shared one)."""
    from cuzk.backends.cuda.spmv import _coefficient_keys

    values = [1 << k for k in range(255)] + [R - (1 << k) for k in range(255)]
    values += list(range(2, 5000)) + [R - v for v in range(1, 5000)]
    keys = _coefficient_keys(np, fr_to_array(values))
    assert len(np.unique(keys)) == len(set(values))


def test_a_matrix_of_powers_of_two_is_coded(engine, cpu):
    from cuzk.backends.cuda.spmv import CODE16

    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    pool = [1 << k for k in range(255)] + [R - (1 << k) for k in range(0, 255, 3)]
    rows = [
        [(int(rng.integers(0, 120)), pool[int(rng.integers(0, len(pool)))]) for _ in range(k)]
        for k in rng.integers(0, 40, size=300)
    ]
    m = SparseMatrix.from_rows(rows, 120)
    w = weird_w(rng, 120)
    assert np.array_equal(product(engine, m, w), cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"
    assert engine.upload(m).mode == CODE16


def test_a_file_mapped_matrix_uploads_in_chunks(engine, cpu, tmp_path):
    """The circuit cache maps its matrices: the upload reads them a chunk at a time
    and lets each chunk's pages go (algebra.sparse.release_rows); the product is
    the in-memory matrix's."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 500, 200, 40)
    arrays = {}
    for name in ("indices", "coeffs"):
        np.save(tmp_path / f"{name}.npy", getattr(m, name))
        arrays[name] = np.load(tmp_path / f"{name}.npy", mmap_mode="r")
    mapped = SparseMatrix(m.indptr, arrays["indices"], arrays["coeffs"], m.num_cols)
    chunk = engine.upload_chunk
    engine.upload_chunk = 97  # many chunks, none on a page boundary
    try:
        dev = engine.from_arrays(mapped.indptr, mapped.indices, mapped.coeffs, mapped.num_cols)
    finally:
        engine.upload_chunk = chunk
    try:
        w = weird_w(rng, 200)
        got = np.asarray(to_numpy(engine.matvec(dev, w)))
        assert np.array_equal(got, cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"
    finally:
        dev.close()


def test_a_key_collision_falls_back_to_full_coefficients_and_says_so(
    engine, cpu, monkeypatch, caplog
):
    """Should two coefficients ever share a key, the matrix is stored whole (the
    product stays exact) and the log says what that costs."""
    import cuzk.backends.cuda.spmv as spmv

    monkeypatch.setattr(spmv, "_coefficient_keys", lambda xp, c: c[:, 0] & xp.uint64(1))
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = random_matrix(rng, 300, 100, 20)
    with caplog.at_level("WARNING", logger="cuzk.backends.cuda.spmv"):
        dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    try:
        assert dev.mode == spmv.RAW
        (line,) = [r.getMessage() for r in caplog.records if "share a 64-bit key" in r.getMessage()]
        assert line.endswith(f"({(dev.hold.nbytes) / 2**30:.2f} GiB)")
        w = weird_w(rng, 100)
        got = np.asarray(to_numpy(engine.matvec(dev, w)))
        assert np.array_equal(got, cpu.spmv(m, w)), f"{engine.kernel} seed {seed}"
    finally:
        dev.close()


# --- matrices streamed from pinned host memory ------------------------------

STREAM_KINDS = ["ones", "no_one", "raw"]


def stream_matrix(rng, nrows: int, ncols: int, kind: str) -> SparseMatrix:
    """Short and empty rows, spans of 256 empty rows (rows 300..900), a row of 1200
    entries (row 1100) and coefficients of one ``kind``: codes with a 1 among
    them ("ones"), codes without one ("no_one"), all distinct ("raw")."""
    lengths = rng.choice(
        [0, 1, 2, 3, 6, 17, 40], size=nrows, p=[0.2, 0.3, 0.2, 0.1, 0.1, 0.06, 0.04]
    )
    lengths[300:900] = 0
    lengths[1100] = 1200
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    nnz = int(indptr[-1])
    if kind == "raw":
        coeffs = fr_random(nnz, rng)
    else:
        pool = [R - 1, 2, R - 2, 1 << 200, 0] + [int(v) for v in rng.integers(2, 2**63, size=20)]
        pool = fr_to_array(pool + [1] * 4 if kind == "ones" else pool)
        coeffs = pool[rng.integers(0, len(pool), nnz)]
    return SparseMatrix(indptr, rng.integers(0, ncols, nnz).astype(np.int64), coeffs, ncols)


def longest_span(indptr: np.ndarray) -> int:
    """The most entries of any STREAM_ROWS span of rows."""
    from cuzk.backends.cuda.csr_bytes import STREAM_ROWS

    rows = len(indptr) - 1
    return int(
        np.diff(indptr[np.minimum(np.arange(0, rows + STREAM_ROWS, STREAM_ROWS), rows)]).max()
    )


@pytest.mark.parametrize("block_entries", [1000, 1 << 24])
@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_streamed_product_is_the_resident_product(engine, cpu, kind, block_entries, monkeypatch):
    """Streamed in many blocks (of one and of several spans, one past the limit)
    or in one: the resident product and the CPU's, bit for bit."""
    from cuzk.backends.cuda.csr_bytes import STREAM_ROWS
    from cuzk.backends.cuda.spmv import CODE16, RAW, StreamedCsr, stream_blocks

    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = stream_matrix(rng, 7 * 256 + 77, 150, kind)
    w = weird_w(rng, 150)
    monkeypatch.setattr(engine, "block_entries", block_entries)
    budget = engine.ctx.budget
    before = budget.reserved_bytes
    dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    s = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols, resident=False)
    try:
        assert isinstance(s, StreamedCsr)
        assert s.mode == dev.mode == (RAW if kind == "raw" else CODE16)
        assert (s.one_ptr is None) == (kind != "ones")
        blocks = stream_blocks(s.row_ptr, s.one_ptr, block_entries)
        assert blocks[0][0] == 0 and blocks[-1][1] == m.num_rows
        assert all(r0 % STREAM_ROWS == 0 for r0, _ in blocks)
        if block_entries == 1000:
            entries = [int(m.indptr[r1] - m.indptr[r0]) for r0, r1 in blocks]
            assert len(blocks) >= 4 and max(r1 - r0 for r0, r1 in blocks) > STREAM_ROWS
            assert max(entries) > block_entries  # the span of the long row
            assert all(
                e <= block_entries or r1 - r0 <= STREAM_ROWS
                for e, (r0, r1) in zip(entries, blocks, strict=True)
            )
        else:
            assert blocks == [(0, m.num_rows)]
        want = cpu.spmv(m, w)
        assert np.array_equal(to_numpy(engine.matvec(dev, w)), want), f"{kind} seed {seed}"
        assert np.array_equal(to_numpy(engine.matvec(s, w)), want), f"{kind} seed {seed}"
        assert np.array_equal(to_numpy(engine.matvec(s, w)), want), f"{kind} seed {seed}"
    finally:
        dev.close()
        s.close()
    assert budget.reserved_bytes == before


@pytest.mark.parametrize("resident", [True, False])
def test_product_into_a_larger_buffer(backend, cpu, resident):
    """out=: the product lands in its first num_rows rows, the others stay."""
    import cupy

    from cuzk.backends.cuda.spmv import SpmvEngine

    engine = SpmvEngine(backend.ctx, backend.fr, block_entries=400)
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    m = stream_matrix(rng, 5 * 256 + 3, 90, "ones")
    w = weird_w(rng, 90)
    dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols, resident=resident)
    try:
        fill = rng.integers(0, 2**64, size=(m.num_rows + 300, 4), dtype=np.uint64)
        out = cupy.asarray(fill.copy())
        assert engine.matvec(dev, w, out=out) is out
        got = to_numpy(out)
        assert np.array_equal(got[: m.num_rows], cpu.spmv(m, w)), f"seed {seed}"
        assert np.array_equal(got[m.num_rows :], fill[m.num_rows :])
        exact = cupy.zeros((m.num_rows, 4), dtype=cupy.uint64)
        assert np.array_equal(to_numpy(engine.matvec(dev, w, out=exact)), cpu.spmv(m, w))
        for bad in (
            cupy.zeros((m.num_rows - 1, 4), dtype=cupy.uint64),
            cupy.zeros((m.num_rows, 4), dtype=cupy.uint32),
            cupy.zeros((2 * m.num_rows, 4), dtype=cupy.uint64)[::2],
        ):
            with pytest.raises(ValueError, match="out"):
                engine.matvec(dev, w, out=bad)
    finally:
        dev.close()


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_streamed_memory_is_what_the_models_say(backend, kind, monkeypatch):
    """The streamed form's build never reserves more than the resident build; a
    product reserves within streamed_bytes and gives it back; the pinned
    arrays are pinned_bytes' bound and exactly the resident arrays without
    the dictionary and the long-row list; close() gives the dictionary back."""
    from cuzk.backends.cuda.csr_bytes import (
        long_row_count,
        pinned_bytes,
        resident_bytes_exact,
        streamed_bytes,
    )
    from cuzk.backends.cuda.spmv import SpmvEngine

    engine = SpmvEngine(backend.ctx, backend.fr, block_entries=700)
    rng = np.random.default_rng(secrets.randbits(32))
    m = stream_matrix(rng, 6 * 256 + 100, 120, kind)
    w = fr_random(120, rng)
    budget = backend.ctx.budget
    before = budget.reserved_bytes
    peak = [before]
    acquire = budget.acquire

    def tracked(*args, **kwargs):
        hold = acquire(*args, **kwargs)
        peak[0] = max(peak[0], budget.reserved_bytes)
        return hold

    monkeypatch.setattr(budget, "acquire", tracked)
    dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
    engine.prepare_seg(dev)
    resident_peak, peak[0] = peak[0], before
    dev.close()
    s = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols, resident=False)
    try:
        assert peak[0] <= resident_peak
        assert budget.reserved_bytes == before + s.nbytes
        distinct = m.nnz if s.dictionary is None else len(s.dictionary)
        assert (s.nbytes > 0) == (kind != "raw")
        op = f"CSR {m.num_rows} x {m.num_cols} streamed"
        budget.peak_by_operation.pop(op, None)
        engine.matvec(s, w)
        assert budget.reserved_bytes == before + s.nbytes
        model = streamed_bytes(m.num_rows, m.nnz, distinct, 700, longest_span(m.indptr))
        assert budget.peak_by_operation[op] + s.nbytes <= model
        assert s.nbytes_pinned <= pinned_bytes(m.num_rows, m.nnz, distinct)
        long_rows = long_row_count(m.indptr)
        assert s.nbytes_pinned == resident_bytes_exact(m) - s.nbytes - 8 * long_rows
    finally:
        s.close()
    assert budget.reserved_bytes == before


@pytest.mark.parametrize("nrows", [0, 1, 300, 700])
def test_streamed_empty_matrices(backend, cpu, nrows):
    """No entries (and no rows): zeros, into out's first rows too."""
    import cupy

    from cuzk.backends.cuda.spmv import SpmvEngine, StreamedCsr

    engine = SpmvEngine(backend.ctx, backend.fr, block_entries=256)
    m = SparseMatrix.from_rows([[] for _ in range(nrows)], 5)
    w = fr_random(5, np.random.default_rng(1))
    before = backend.ctx.budget.reserved_bytes
    s = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols, resident=False)
    try:
        assert isinstance(s, StreamedCsr) and s.nnz == 0
        assert np.array_equal(to_numpy(engine.matvec(s, w)), cpu.spmv(m, w))
        out = cupy.full((nrows + 2, 4), 7, dtype=cupy.uint64)
        got = to_numpy(engine.matvec(s, w, out=out))
        assert not got[:nrows].any() and (got[nrows:] == 7).all()
    finally:
        s.close()
    assert backend.ctx.budget.reserved_bytes == before


def test_a_row_too_long_for_the_seg_kernel_stays_resident(backend, cpu, monkeypatch, caplog):
    import cuzk.backends.cuda.spmv as spmv

    monkeypatch.setattr(spmv, "SEG_MAX_ROW", 100)
    engine = spmv.SpmvEngine(backend.ctx, backend.fr)
    rng = np.random.default_rng(secrets.randbits(32))
    m = stream_matrix(rng, 1300, 60, "ones")
    w = weird_w(rng, 60)
    with caplog.at_level("WARNING", logger="cuzk.backends.cuda.spmv"):
        dev = engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols, resident=False)
    try:
        assert isinstance(dev, spmv.DeviceCsr)
        assert any("stays resident" in r.getMessage() for r in caplog.records)
        assert np.array_equal(to_numpy(engine.matvec(dev, w)), cpu.spmv(m, w))
    finally:
        dev.close()


def test_stream_blocks():
    """Whole 256-row spans from 0 to the end, within the entry and row limits
    unless a single span is over them."""
    from cuzk.backends.cuda.csr_bytes import STREAM_ROWS
    from cuzk.backends.cuda.spmv import stream_blocks

    rng = np.random.default_rng(secrets.randbits(32))
    for rows, limit in [(0, 100), (1, 100), (256, 100), (5000, 300), (5000, 3000), (3000, 10**9)]:
        lengths = rng.choice([0, 0, 1, 3, 50], size=rows)
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ones = np.concatenate([[0], np.cumsum(rng.integers(0, 2, size=rows))]).astype(np.int64)
        for one_ptr in (None, ones):
            blocks = stream_blocks(ptr, one_ptr, limit)
            starts = [r0 for r0, _ in blocks]
            assert [r1 for _, r1 in blocks] == [*starts[1:], rows][: len(blocks)]
            assert (not blocks and rows == 0) or (starts[0] == 0 and blocks[-1][1] == rows)
            for r0, r1 in blocks:
                entries = ptr[r1] - ptr[r0] + (0 if one_ptr is None else one_ptr[r1] - one_ptr[r0])
                assert r0 % STREAM_ROWS == 0 and r1 > r0
                one_span = r1 - r0 <= STREAM_ROWS
                assert one_span or (entries <= limit and r1 - r0 <= limit)


def test_streamed_models():
    """A 32GiB PoRep-like shape streams through far less than it takes resident;
    the pinned form is the resident one without the dictionary."""
    from cuzk.backends.cuda.csr_bytes import pinned_bytes, resident_bytes, streamed_bytes

    rows, nnz, distinct = 1 << 27, 3 << 27, 5000
    assert streamed_bytes(rows, nnz, distinct) < 1 << 30 < resident_bytes(rows, nnz, distinct)
    assert (
        pinned_bytes(rows, nnz, distinct, 99)
        == resident_bytes(rows, nnz, distinct, 99) - 32 * distinct - 8 * 99
    )
    assert pinned_bytes(rows, nnz, nnz) == resident_bytes(rows, nnz, nnz)
    assert pinned_bytes(rows, 0, 0) == 8 * (rows + 1)
    assert streamed_bytes(rows, 0, 0) == streamed_bytes(0, 0, 0) == 0
    # a span longer than the blocks widens the staging sets
    assert streamed_bytes(rows, nnz, distinct, 1 << 20, 1 << 22) > streamed_bytes(
        rows, nnz, distinct, 1 << 20
    )
