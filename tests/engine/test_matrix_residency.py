"""The mapped matrix file's pages stay out of the daemon's resident set while a
key loads (issue 13: the 32GiB PoRep daemon's RSS reached 33 GiB, the whole
30 GiB matrix cache, though the CSR upload releases the chunks it reads).

The key load of :meth:`cuzk.engine.keystore.KeyStore.acquire_device`, without
the points: the matrices mapped from the circuit cache
(:func:`cuzk.synthesis.cache.load_r1cs`, what ``MATRICES`` gives), the key's
device reservation (:meth:`CudaBackend.prepared_key_bytes`), its layout
(:meth:`KeyLayout.of`: the a and b density masks), the upload of A, B and C
(:meth:`SpmvEngine.from_arrays`, here over a numpy stand-in for CuPy that
copies, as a host-to-device copy does), then the file mapped again (the
first partition's ``handler.r1cs()`` after ``forget_r1cs``). Each step's
file-backed resident set is read from ``/proc/self/status`` (``RssFile`` +
``RssShmem``, where a tmpfs file's pages count), at its end and by a thread
sampling it throughout; it must stay near one chunk, not grow with the file.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from cuzk.algebra import sparse
from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.r1cs import R1CS
from cuzk.synthesis.cache import load_r1cs, save_r1cs

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")

ROWS = 1 << 17
PER_ROW = 8  # entries a row: 1M a matrix, 40 MiB of columns and coefficients
INPUTS = 3
COLS = 1 << 17
MAPPED_CHUNK = 1 << 20  # bytes of a mapped array walked at a time (sparse.MAPPED_CHUNK_BYTES)
UPLOAD_CHUNK = 1 << 15  # entries a CSR upload converts at a time (1.25 MiB mapped)
BOUND = 24 << 20  # file-backed bytes any step may leave or hold resident


def file_resident() -> int:
    """This process's resident file-backed and shared pages, bytes."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("RssFile", "RssShmem"):
            found[name] = int(rest.split()[0]) * 1024
    if "RssFile" not in found:
        pytest.skip("no RssFile in /proc/self/status")
    return sum(found.values())


class Sampler:
    """The largest :func:`file_resident` seen while a step runs (a thread reads it
    every millisecond; numpy lets go of the interpreter in its loops)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, file_resident())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, file_resident())


def copying_cupy() -> types.ModuleType:
    """CuPy's stand-in for the upload: numpy, whose asarray / array copy (a
    host-to-device copy reads the host array once, then holds its own)."""
    cp = types.ModuleType("cupy")

    def asarray(a, dtype=None):
        return np.array(a, dtype=dtype, copy=True)

    cp.asarray = asarray
    cp.array = asarray
    cp.ascontiguousarray = lambda a, dtype=None: np.ascontiguousarray(asarray(a, dtype))
    cp.asnumpy = lambda a, stream=None: np.array(a, copy=True)
    cp.__getattr__ = lambda name: getattr(np, name)
    return cp


class StandInFr:
    """FrKernels' two calls the upload makes: the cache's coefficients are
    canonical (reducing is the identity on them); Montgomery form is not what
    this test looks at."""

    def reduce(self, a):
        return np.array(a, copy=True)

    def to_mont(self, a):
        return np.array(a, copy=True)


class StandInContext:
    def __init__(self) -> None:
        from cuzk.backends.cuda.memory import DeviceBudget

        self.device_id = 0
        self.budget = DeviceBudget(0, 1 << 40)

    def module(self, name: str, options: tuple[str, ...] = ()):
        return types.SimpleNamespace(get_function=lambda name: None)


def synthetic_r1cs(seed: int = 7) -> R1CS:
    """A 2^17-row system with a few distinct coefficients, as a Filecoin circuit's."""
    rng = np.random.default_rng(seed)
    pool = fr_to_array([1, R - 1, 2, 1 << 62, 1 << 64, 3, R - 2, 5])
    mats = []
    for _ in range(3):
        nnz = ROWS * PER_ROW
        indptr = np.arange(0, nnz + 1, PER_ROW, dtype=np.int64)
        indices = rng.integers(0, COLS, nnz, dtype=np.int64)
        coeffs = pool[rng.integers(0, len(pool), nnz)]
        mats.append(SparseMatrix(indptr, indices, coeffs, COLS))
    return R1CS(INPUTS, COLS - INPUTS, *mats)


def test_a_key_load_keeps_the_mapped_matrices_out_of_the_resident_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cuzk.backends.cuda.backend import CudaBackend
    from cuzk.backends.cuda.spmv import SpmvEngine
    from cuzk.groth16.prover import KeyLayout

    monkeypatch.setattr(sparse, "MAPPED_CHUNK_BYTES", MAPPED_CHUNK)
    monkeypatch.setitem(sys.modules, "cupy", copying_cupy())
    path = tmp_path / "matrices-r1cs.npz"
    want = synthetic_r1cs()
    save_r1cs(want, path)
    file_bytes = path.stat().st_size
    assert file_bytes > 100 << 20
    engine = SpmvEngine(StandInContext(), StandInFr(), kernel="warp")
    engine.upload_chunk = UPLOAD_CHUNK

    base = file_resident()
    grown: dict[str, tuple[int, int]] = {}  # step: (at its end, its peak), over base

    def step(name: str, fn, *args):
        with Sampler() as s:
            out = fn(*args)
        grown[name] = (file_resident() - base, s.peak - base)
        return out

    def upload(m: SparseMatrix):
        return engine.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)

    t0 = time.perf_counter()
    r1cs = step("map the matrices (load_r1cs)", load_r1cs, path)
    step("the key's reservation (prepared_key_bytes)", CudaBackend.prepared_key_bytes, 0, r1cs)
    layout = step("the key's layout (KeyLayout.of)", KeyLayout.of, r1cs)
    devs = [step(f"upload {n} (from_arrays)", upload, getattr(r1cs, n.lower())) for n in "ABC"]
    del r1cs  # forget_r1cs: the next r1cs() maps the file again
    again = step("map them again (the first partition)", load_r1cs, path)
    seconds = time.perf_counter() - t0

    report = "\n".join(
        f"  {name}: {end / 2**20:.1f} MiB at its end, peak {peak / 2**20:.1f} MiB"
        for name, (end, peak) in grown.items()
    )
    print(f"\nfile {file_bytes / 2**20:.0f} MiB, {seconds:.2f} s; file-backed resident:\n{report}")
    worst = max(max(v) for v in grown.values())
    assert worst <= BOUND, f"the mapped file stayed resident:\n{report}"

    # what was laid out and uploaded is what the matrices in memory give
    assert np.array_equal(layout.b_select, np.flatnonzero(want.b.column_mask()))
    a_aux = INPUTS + np.flatnonzero(want.a.column_mask()[INPUTS:])
    assert np.array_equal(layout.a_select, np.concatenate([np.arange(INPUTS), a_aux]))
    for dev, m in zip(devs, (want.a, want.b, want.c), strict=True):
        assert dev.nnz == m.nnz
        assert np.array_equal(np.asarray(dev.row_ptr) + np.asarray(dev.one_ptr), m.indptr)
    assert again.num_constraints == ROWS and again.a.nnz == ROWS * PER_ROW


@pytest.mark.parametrize("chunk", [40, 4096, 1 << 20])
@pytest.mark.parametrize("step", [1, 3, 7, 64, 5000])
def test_chunked_passes_give_what_whole_array_passes_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, step: int
) -> None:
    """The long-row count, the coefficient sample, the column range and mask, read
    a chunk at a time from a mapped matrix, equal those of the array in memory."""
    from cuzk.backends.cuda.csr_bytes import LONG_ROW, long_row_count, sampled_coefficients

    monkeypatch.setattr(sparse, "MAPPED_CHUNK_BYTES", chunk)
    rng = np.random.default_rng(step * 31 + chunk)
    lengths = rng.choice([0, 1, 5, LONG_ROW, LONG_ROW + 1, 90], size=300)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(indptr[-1])
    coeffs = rng.integers(0, 1 << 63, size=(nnz, 4), dtype=np.uint64)
    coeffs[rng.random(nnz) < 0.3] = 0
    indices = rng.integers(0, 5000, nnz, dtype=np.int64)
    mapped = {}
    for name, a in (("indptr", indptr), ("indices", indices), ("coeffs", coeffs)):
        np.save(tmp_path / f"{name}.npy", a)
        mapped[name] = np.load(tmp_path / f"{name}.npy", mmap_mode="r")
    assert long_row_count(mapped["indptr"]) == int((np.diff(indptr) > LONG_ROW).sum())
    assert np.array_equal(sampled_coefficients(mapped["coeffs"], step), coeffs[::step])
    m = SparseMatrix(mapped["indptr"], mapped["indices"], mapped["coeffs"], 5000)
    mask = np.zeros(5000, dtype=bool)
    mask[indices[coeffs.any(axis=1)]] = True
    assert np.array_equal(m.column_mask(), mask)
    with pytest.raises(ValueError, match="column index outside"):
        SparseMatrix(mapped["indptr"], mapped["indices"], mapped["coeffs"], int(indices.max()))
