"""On-disk cache of compiled circuits, keyed by circuit id and code version.

Two kinds of entries, both ``.npz`` files (arrays plus a JSON header; no
pickles):

- ``<id>-<version>.npz``: the compiled structure (templates, their blocks
  and calls, the coefficient table) — small even for a 125M-constraint
  WindowPoSt partition;
- ``<id>-<version>-r1cs.npz``: the materialised A, B, C matrices, for
  circuits small enough to hold (WinningPoSt, test sizes).

The version is a hash of the source of every module that decides a
circuit's layout (``cuzk.hashers``, ``cuzk.gadgets``, ``cuzk.circuits``), so
any change to a gadget invalidates old entries. The directory is
``$CUZK_CIRCUIT_CACHE`` or ``~/.cache/cuzk/circuits``.

An entry is built by one process at a time (:func:`building`, an ``flock``
on ``<entry>.lock`` beside it): the daemon's synthesis processes, a
``prove-c1`` beside the daemon, ask for the same circuit at once, and the
others wait for the first and load what it saved instead of each recording
a 32GiB plan or building its matrices again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import struct
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from cuzk import environment
from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.sparse import SparseMatrix
from cuzk.r1cs import R1CS
from cuzk.synthesis.compile import (
    Block,
    Call,
    CoefficientTable,
    CompiledCircuit,
    Template,
    flatten,
    matrix_parts,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

FORMAT = 1


@functools.cache
def code_version() -> str:
    """A hash of the sources that determine circuit layouts: the hashers, the
    gadgets, this synthesis machinery and the circuits (read as files: the
    circuits are a layer above)."""
    h = hashlib.sha256(b"cuzk-circuits-%d" % FORMAT)
    cuzk_root = Path(__file__).resolve().parents[1]
    for name in ("hashers", "gadgets", "synthesis", "circuits"):
        root = cuzk_root / name
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return environment.circuit_cache() or Path.home() / ".cache" / "cuzk" / "circuits"


def _stem(circuit_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", circuit_id) + "-" + code_version()


def atomic_save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` into a temporary file beside ``path``, then renamed over it."""
    atomic_write(path, lambda f: np.savez(f, **arrays))


def atomic_write(path: Path, write: Callable[[Any], None]) -> None:
    """``write(file)`` into a temporary file beside ``path``, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    os.close(fd)
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --------------------------------------------------------------------------
# The compiled structure
# --------------------------------------------------------------------------


def save_compiled(cc: CompiledCircuit, path: Path) -> None:
    templates = cc.templates()
    index = {id(t): i for i, t in enumerate(templates)}
    arrays: dict[str, np.ndarray] = {"coefficients": cc.coefficients.array()}
    meta_templates = []
    nblocks = 0
    for t in templates:
        segs = []
        for off, seg in t.segments:
            if isinstance(seg, Block):
                for m in range(3):
                    for name in ("indptr", "kind", "index", "coeff"):
                        arrays[f"b{nblocks}_{m}_{name}"] = getattr(seg, name)[m]
                segs.append({"block": nblocks, "row": off, "rows": seg.num_rows})
                nblocks += 1
            else:
                segs.append(
                    {
                        "call": index[id(seg.template)],
                        "row": off,
                        "aux": seg.aux_offset,
                        "input": seg.input_offset,
                        "ports": [
                            [int(k), int(i)]
                            for k, i in zip(seg.port_kind, seg.port_index, strict=True)
                        ],
                    }
                )
        meta_templates.append(
            {
                "key": t.key,
                "ports": t.num_ports,
                "aux": t.num_aux,
                "inputs": t.num_inputs,
                "rows": t.num_rows,
                "nnz": list(t.nnz),
                "outputs": [list(o) for o in t.outputs],
                "segments": segs,
            }
        )
    meta = {
        "format": FORMAT,
        "circuit_id": cc.circuit_id,
        "copies": cc.copies,
        "top": index[id(cc.top)],
        "templates": meta_templates,
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    atomic_save(path, arrays)


def load_compiled(path: Path) -> CompiledCircuit:
    with np.load(path) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        if meta["format"] != FORMAT:
            raise ValueError(f"{path}: cache format {meta['format']}, expected {FORMAT}")
        coeffs = CoefficientTable()
        for v in fr_from_array(z["coefficients"]):
            coeffs.id(v)
        templates: list[Template] = []
        for mt in meta["templates"]:
            t = Template(
                key=mt["key"],
                num_ports=mt["ports"],
                num_aux=mt["aux"],
                num_inputs=mt["inputs"],
                num_rows=mt["rows"],
                nnz=tuple(mt["nnz"]),
                outputs=[tuple(o) for o in mt["outputs"]],
            )
            for seg in mt["segments"]:
                if "block" in seg:
                    b = seg["block"]
                    parts = {
                        name: tuple(z[f"b{b}_{m}_{name}"] for m in range(3))
                        for name in ("indptr", "kind", "index", "coeff")
                    }
                    t.segments.append((seg["row"], Block(num_rows=seg["rows"], **parts)))
                else:
                    ports = np.array(seg["ports"], dtype=np.int64).reshape(-1, 2)
                    call = Call(
                        template=templates[seg["call"]],
                        port_kind=ports[:, 0].astype(np.int8),
                        port_index=ports[:, 1],
                        aux_offset=seg["aux"],
                        input_offset=seg["input"],
                        row_offset=seg["row"],
                    )
                    t.segments.append((seg["row"], call))
            templates.append(t)
    return CompiledCircuit(meta["circuit_id"], templates[meta["top"]], meta["copies"], coeffs)


def cached(
    path: Path,
    load: Callable[[Path], T],
    build: Callable[[], T],
    save: Callable[[T, Path], None],
    what: str,
) -> T:
    """``load(path)`` when the cache holds it, else ``build()`` and ``save`` it there
    (one process at a time: :func:`building`); a damaged entry is rebuilt, and a
    cache that cannot be written only warns.

    An entry the cache holds is read without the build lock: entries are
    written whole (:func:`atomic_write`), and under the lock the processes
    loading one entry at once (a synthesis pool's first partitions, the
    daemon's witness plan) read it one after another, the last waiting for
    all before it."""
    found = _load_entry(path, load, what)
    if found is not None:
        return found
    with building(path):
        found = _load_entry(path, load, what)  # perhaps saved by a process waited for
        if found is not None:
            return found
        made = build()
        try:
            save(made, path)
            log.info("%s built and cached at %s", what, path)
        except OSError as e:
            log.warning("could not cache %s at %s: %s", what, path, e)
        return made


def _load_entry(path: Path, load: Callable[[Path], T], what: str) -> T | None:
    if not path.exists():
        return None
    try:
        found = load(path)
    except (OSError, ValueError, KeyError) as e:  # a damaged entry is rebuilt
        log.warning("ignoring cache entry %s: %s", path, e)
        return None
    log.info("%s loaded from %s", what, path)
    return found


@contextlib.contextmanager
def building(path: Path) -> Iterator[None]:
    """Hold the build lock of the cache entry ``path`` (an exclusive ``flock`` on
    ``<path>.lock``), waiting while another process builds it. Where the lock
    file cannot be made (a cache that cannot be written) nothing is locked."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def load_or_compile(
    circuit_id: str, build: Callable[[], CompiledCircuit], directory: Path | None = None
) -> CompiledCircuit:
    """The compiled circuit from the cache, or ``build()`` it and store it."""
    path = (directory or cache_dir()) / f"{_stem(circuit_id)}.npz"
    return cached(path, load_compiled, build, save_compiled, f"circuit {circuit_id}")


# --------------------------------------------------------------------------
# Materialised matrices
# --------------------------------------------------------------------------


def save_r1cs(r1cs: R1CS, path: Path) -> None:
    arrays = {"shape": np.array([r1cs.num_inputs, r1cs.num_aux], dtype=np.int64)}
    for name in ("a", "b", "c"):
        m = getattr(r1cs, name)
        arrays[f"{name}_indptr"] = m.indptr
        arrays[f"{name}_indices"] = m.indices
        arrays[f"{name}_coeffs"] = m.coeffs
    atomic_save(path, arrays)


# Entries whose 32-byte coefficients are looked up and written at once (128 MiB).
_COEFF_CHUNK = 1 << 22


def _npy_member(zf: zipfile.ZipFile, name: str, shape: tuple, dtype: Any, pieces: Any) -> None:
    """One ``name.npy`` member of an uncompressed npz (as ``np.savez`` writes
    it), its data written piece by piece."""
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": tuple(int(x) for x in shape),
    }
    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(f, header)
        for piece in pieces:
            f.write(np.ascontiguousarray(piece, dtype=dtype).data)


def write_r1cs(cc: CompiledCircuit, path: Path) -> None:
    """The matrices of ``cc`` built and written to ``path`` one at a time, so
    the host holds one matrix's row pointers, columns and coefficient ids
    (:func:`cuzk.synthesis.compile.matrix_parts`), never the three matrices
    or their 32-byte coefficients: what :func:`load_r1cs` maps."""

    def write(f: Any) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            shape = np.array([cc.num_inputs, cc.num_aux], dtype=np.int64)
            _npy_member(zf, "shape", shape.shape, np.int64, [shape])
            insts = flatten(cc.top, cc.num_inputs, cc.copies)
            for m, name in enumerate(("a", "b", "c")):
                parts = matrix_parts(cc, m, insts).merged()
                ptr, idx, nnz = parts.indptr, parts.indices, len(parts.indices)
                coeffs = (parts.coeffs(lo, lo + _COEFF_CHUNK) for lo in range(0, nnz, _COEFF_CHUNK))
                _npy_member(zf, f"{name}_indptr", ptr.shape, np.int64, [ptr])
                _npy_member(zf, f"{name}_indices", idx.shape, np.int64, [idx])
                _npy_member(zf, f"{name}_coeffs", (nnz, 4), np.uint64, coeffs)
                del parts, ptr, idx, coeffs

    atomic_write(path, write)


def load_r1cs(path: Path, mmap: bool = True) -> R1CS:
    """The matrices cached at ``path``; with ``mmap`` (the default) mapped from
    the file read-only instead of read: they are page cache, which the kernel
    can reclaim, not the process's own memory (a 32GiB PoRep partition's are
    30 GiB), and opening takes no time."""
    if mmap:
        z: Any = _MappedNpz(path)
    else:
        z = np.load(path)
    with z:
        n_in, n_aux = (int(x) for x in z["shape"])
        mats = [
            SparseMatrix(
                indptr=z[f"{n}_indptr"],
                indices=z[f"{n}_indices"],
                coeffs=z[f"{n}_coeffs"],
                num_cols=n_in + n_aux,
            )
            for n in ("a", "b", "c")
        ]
    return R1CS(num_inputs=n_in, num_aux=n_aux, a=mats[0], b=mats[1], c=mats[2])


class _MappedNpz:
    """The arrays of an uncompressed ``.npz`` (as ``np.savez`` writes it), each
    memory-mapped at its place in the zip file; compressed members are read."""

    _LOCAL_HEADER = 30  # bytes before a zip member's name and extra field

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._zip = zipfile.ZipFile(self.path)

    def __enter__(self) -> _MappedNpz:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def __getitem__(self, name: str) -> np.ndarray:
        info = self._zip.getinfo(f"{name}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            with self._zip.open(info) as f:
                return np.lib.format.read_array(f)
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            head = f.read(self._LOCAL_HEADER)
            if head[:4] != b"PK\x03\x04":
                raise ValueError(f"{self.path}: member {name} has no local zip header")
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            f.seek(info.header_offset + self._LOCAL_HEADER + name_len + extra_len)
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            offset = f.tell()
        if dtype.hasobject:
            raise ValueError(f"{self.path}: member {name} holds Python objects")
        if int(np.prod(shape)) == 0:
            return np.zeros(shape, dtype=dtype)
        return np.memmap(
            self.path,
            dtype=dtype,
            mode="r",
            offset=offset,
            shape=shape,
            order="F" if fortran else "C",
        )


def r1cs_path(cc: CompiledCircuit, directory: Path | None = None) -> Path:
    """Where :func:`load_or_build_r1cs` keeps the matrices of a compiled circuit."""
    return (directory or cache_dir()) / f"{_stem(cc.circuit_id)}-r1cs.npz"


def r1cs_build_bytes(cc: CompiledCircuit, directory: Path | None = None) -> int:
    """Host bytes :func:`load_or_build_r1cs` takes: 0 when the matrices are cached
    (they are mapped), else :func:`write_r1cs`'s peak: the largest matrix's
    parts (12 bytes an entry, 1 more for a merge's mask, 16 a row) plus the
    builder's bounded temporaries, with a quarter of slack."""
    if r1cs_path(cc, directory).exists():
        return 0
    rows = cc.num_constraints + 1
    largest = max(13 * z + 16 * rows for z in cc.nnz)
    return largest * 5 // 4 + (1 << 30)


def load_or_build_r1cs(cc: CompiledCircuit, directory: Path | None = None) -> R1CS:
    """The circuit's matrices mapped from the cache, built and written there first
    when missing (by one process at a time: :func:`building`)."""
    path = r1cs_path(cc, directory)
    found = _load_entry(path, load_r1cs, f"matrices of {cc.circuit_id}")  # written whole
    if found is not None:
        return found
    with building(path):
        found = _load_entry(path, load_r1cs, f"matrices of {cc.circuit_id}")
        if found is not None:
            return found
        try:
            write_r1cs(cc, path)
        except OSError as e:
            log.warning("could not cache the matrices of %s: %s", cc.circuit_id, e)
            return cc.to_r1cs()
    return load_r1cs(path)  # mapped: page cache, not the process's memory
