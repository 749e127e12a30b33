"""bellperson files: verifying keys (.vk), parameters (.params) and proofs.

All points use the zcash BLS12-381 encoding (:mod:`cuzk.algebra.encoding`),
uncompressed in keys, compressed in proofs.

- ``.vk``: α₁, β₁, β₂, γ₂, δ₁, δ₂ (96 / 192-byte uncompressed points), then a
  u32 big-endian count and that many IC points.
- ``.params``: the verifying key, then five vectors, each a u32 big-endian
  count followed by the points: ``h`` (m − 1 G1 points for an evaluation
  domain of m), ``l`` (one per aux variable), ``a``, ``b_g1`` (G1) and
  ``b_g2`` (G2) (inputs first; points at infinity are left out, so these
  follow the circuit's A and B densities). No point of the five vectors, and
  no IC point, is ever at infinity.
- proofs: ``A ‖ B ‖ C`` compressed, 192 bytes per partition, partitions
  concatenated; bellperson refuses points at infinity in a proof.

:class:`MappedParams` opens a .params file lazily, as bellperson's mapped
parameters do: the file is memory-mapped, the small verifying key decoded,
and the five vectors located by walking their length prefixes (five reads of
four bytes), so a 47 GiB file opens in milliseconds. Points are converted to
cuzk's limb arrays only when asked (a vectorised byte shuffle), and validated
one by one only by :meth:`MappedParams.check`.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections import deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import zcash_first_flagged
from cuzk.algebra.curves import Affine
from cuzk.algebra.encoding import (
    G1_UNCOMPRESSED,
    G2_UNCOMPRESSED,
    decode_g1,
    decode_g2,
    encode_g1,
    encode_g2,
)
from cuzk.errors import EncodingError, InputError
from cuzk.formats.points import (
    first_true,
    g1_from_zcash,
    g2_from_zcash,
    zcash_flag_problem,
)
from cuzk.groth16.keys import ArraySource, KeySource, ProvingKey, VerifyingKey
from cuzk.groth16.proof import PROOF_BYTES, Proof, decode_proofs, encode_proofs

_U32 = struct.Struct(">I")
SECTIONS = ("h", "l", "a", "b_g1", "b_g2")
_VK_FIELDS = (
    ("alpha_g1", "G1"),
    ("beta_g1", "G1"),
    ("beta_g2", "G2"),
    ("gamma_g2", "G2"),
    ("delta_g1", "G1"),
    ("delta_g2", "G2"),
)


def _size(group: str) -> int:
    return G1_UNCOMPRESSED if group == "G1" else G2_UNCOMPRESSED


# --- verifying key -------------------------------------------------------------


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    out = [
        (encode_g1 if group == "G1" else encode_g2)(getattr(vk, name), compressed=False)
        for name, group in _VK_FIELDS
    ]
    out.append(_U32.pack(len(vk.ic)))
    out += [encode_g1(p, compressed=False) for p in vk.ic]
    return b"".join(out)


def _decode_vk(data, source: str, offset: int = 0) -> tuple[VerifyingKey, int]:
    """Decode a verifying key at ``offset`` of a buffer; returns it and the end offset."""
    points: dict[str, Affine] = {}
    pos = offset
    total = len(data)

    def take(n: int, field: str) -> bytes:
        nonlocal pos
        if pos + n > total:
            raise InputError(
                source, field, f"needs {n} bytes at offset {pos}, the file ends at {total}"
            )
        out = bytes(data[pos : pos + n])
        pos += n
        return out

    for name, group in _VK_FIELDS:
        raw = take(_size(group), f"vk.{name}")
        try:
            points[name] = (decode_g1 if group == "G1" else decode_g2)(raw)
        except EncodingError as e:
            raise InputError(source, f"vk.{name}", str(e)) from e
    (n_ic,) = _U32.unpack(take(4, "vk.ic length"))
    if pos + n_ic * G1_UNCOMPRESSED > total:
        raise InputError(
            source,
            "vk.ic",
            f"{n_ic} points need {n_ic * G1_UNCOMPRESSED} bytes, {total - pos} remain",
        )
    ic = []
    for i in range(n_ic):
        raw = take(G1_UNCOMPRESSED, f"vk.ic[{i}]")
        try:
            p = decode_g1(raw)
        except EncodingError as e:
            raise InputError(source, f"vk.ic[{i}]", str(e)) from e
        if p is None:
            raise InputError(source, f"vk.ic[{i}]", "point at infinity")
        ic.append(p)
    if not ic:
        raise InputError(source, "vk.ic", "empty: a key has at least the IC point of ONE")
    return VerifyingKey(ic=tuple(ic), **points), pos


def vk_from_bytes(data: bytes, source: str = "verifying key") -> VerifyingKey:
    vk, end = _decode_vk(data, source)
    if end != len(data):
        raise InputError(source, "end", f"{len(data) - end} bytes follow the verifying key")
    return vk


def write_vk(path: str | os.PathLike, vk: VerifyingKey) -> None:
    Path(path).write_bytes(vk_to_bytes(vk))


def read_vk(path: str | os.PathLike) -> VerifyingKey:
    return vk_from_bytes(_read_bytes(path), str(path))


def _read_bytes(path: str | os.PathLike) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InputError(str(path), "", f"cannot be read: {e.strerror or e}") from e


# --- proofs --------------------------------------------------------------------


def proofs_to_bytes(proofs: list[Proof]) -> bytes:
    return encode_proofs(proofs)


def proofs_from_bytes(data: bytes, source: str = "proof") -> list[Proof]:
    """Concatenated partition proofs; points at infinity are refused, as bellperson does."""
    proofs = decode_proofs(data, source)
    for i, p in enumerate(proofs):
        for name in ("a", "b", "c"):
            if getattr(p, name) is None:
                raise InputError(
                    source, f"partition {i} {name.upper()}", "point at infinity (not a proof)"
                )
    return proofs


def write_proofs(path: str | os.PathLike, proofs: list[Proof]) -> None:
    Path(path).write_bytes(proofs_to_bytes(proofs))


def read_proofs(path: str | os.PathLike) -> list[Proof]:
    data = _read_bytes(path)
    if len(data) % PROOF_BYTES:
        raise InputError(
            str(path),
            "length",
            f"{len(data)} bytes is not a whole number of {PROOF_BYTES}-byte proofs "
            "(truncated, or not a bellperson proof)",
        )
    return proofs_from_bytes(data, str(path))


# --- parameters ----------------------------------------------------------------


def write_params(path: str | os.PathLike, pk: ProvingKey) -> None:
    """Write a proving key as a bellperson .params file (no point may be at infinity)."""
    for name in SECTIONS:
        arr = getattr(pk, name)
        flat = arr.reshape(len(arr), -1)
        bad = first_true(~flat.any(axis=1)) if len(arr) else None
        if bad is not None:
            raise ValueError(f"{name}[{bad}] is the point at infinity: bellperson cannot store it")
    write_params_from(path, ArraySource(pk))


WRITE_CHUNK_POINTS = 1 << 18


def write_params_from(
    path: str | os.PathLike,
    source: KeySource,
    vk_path: str | os.PathLike | None = None,
    progress: ProgressFn | None = None,
    chunk_points: int = WRITE_CHUNK_POINTS,
) -> int:
    """Write a key source as a bellperson .params file (and its .vk when
    ``vk_path`` is given), a chunk of points at a time: a key of any size is
    written with one chunk of host memory. Each file appears whole or not at
    all (written beside, then renamed). Returns the .params file's size.
    ``progress(section, done, total)`` after each chunk.
    """
    path = Path(path)
    vk = vk_to_bytes(source.vk)
    tmp = path.with_name(f".{path.name}.partial")
    try:
        with open(tmp, "wb") as f:
            f.write(vk)
            for name in SECTIONS:
                n = source.count(name)
                f.write(_U32.pack(n))
                size = _size("G2" if name == "b_g2" else "G1")
                buf = np.empty((max(1, min(n, chunk_points)), size), dtype=np.uint8)
                read = source.reader(name)
                for lo in range(0, n, chunk_points):
                    hi = min(n, lo + chunk_points)
                    part = buf[: hi - lo]
                    read(lo, hi, part)
                    flagged = zcash_first_flagged(part, size)
                    if flagged is not None:  # bellperson cannot store the point at infinity
                        raise ValueError(f"{name}[{lo + flagged[0]}]: {flagged[1]}")
                    f.write(memoryview(part).cast("B"))
                    if progress is not None:
                        progress(name, hi, n)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        if vk_path is not None:
            vk_tmp = Path(vk_path).with_name(f".{Path(vk_path).name}.partial")
            vk_tmp.write_bytes(vk)
            os.replace(vk_tmp, vk_path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path.stat().st_size


@dataclass(frozen=True)
class ParamsSection:
    name: str
    group: str  # "G1" or "G2"
    offset: int  # of the first point
    count: int

    @property
    def point_size(self) -> int:
        return _size(self.group)

    @property
    def end(self) -> int:
        return self.offset + self.count * self.point_size


@dataclass(frozen=True)
class ParamsProblem:
    section: str
    index: int
    problem: str


ProgressFn = Callable[[str, int, int], None]


class MappedParams:
    """A bellperson .params file, memory-mapped; sections located, points untouched."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise InputError(self.path, "", f"cannot be opened: {e.strerror or e}") from e
        if size == 0:
            raise InputError(self.path, "", "empty file")
        self._data = np.memmap(path, dtype=np.uint8, mode="r")
        self.vk, pos = _decode_vk(self._data, self.path)
        vk_end = pos
        sections = {}
        for name in SECTIONS:
            group = "G2" if name == "b_g2" else "G1"
            if pos + 4 > size:
                raise InputError(
                    self.path,
                    f"{name} length",
                    f"the file ends at byte {size}, before this section: truncated",
                )
            (count,) = _U32.unpack(self._data[pos : pos + 4].tobytes())
            sec = ParamsSection(name, group, pos + 4, count)
            if sec.end > size:
                raise InputError(
                    self.path,
                    name,
                    f"{count} {group} points need {count * sec.point_size} bytes at offset "
                    f"{sec.offset}, only {size - sec.offset} remain: truncated, or sections "
                    "out of order",
                )
            sections[name] = sec
            pos = sec.end
        if pos != size:
            raise InputError(
                self.path,
                "end",
                f"{size - pos} bytes follow the b_g2 section: not a bellperson .params file, "
                "or its sections are out of order",
            )
        self.sections: dict[str, ParamsSection] = sections
        self.size = size
        self.vk_bytes = self._data[:vk_end].tobytes()
        self.name = self.path
        self._check_shape()

    def _check_shape(self) -> None:
        """Count relations every bellperson key satisfies (a first test of section order)."""
        s = self.sections
        m = s["h"].count + 1
        if m & (m - 1):
            raise InputError(
                self.path,
                "h",
                f"{s['h'].count} points; h holds m − 1 for a power-of-two domain m "
                "(sections out of order?)",
            )
        if s["b_g1"].count != s["b_g2"].count:
            raise InputError(
                self.path,
                "b_g2",
                f"{s['b_g2'].count} points but b_g1 has {s['b_g1'].count}: they follow the "
                "same density (sections out of order?)",
            )
        if s["a"].count < len(self.vk.ic):
            raise InputError(
                self.path,
                "a",
                f"{s['a'].count} points, fewer than the {len(self.vk.ic)} public inputs "
                "that come first in it (sections out of order?)",
            )

    # --- a key source (cuzk.groth16.keys.KeySource) -----------------------
    def count(self, query: str) -> int:
        return self.sections[query].count

    def reader(self, query: str):
        """Points of a section read straight into the caller's buffer (no mapped
        pages kept): a key streams to a device with one chunk of host memory."""
        sec = self.sections[query]

        def read(lo: int, hi: int, out: np.ndarray) -> None:
            want = (hi - lo) * sec.point_size
            if not (0 <= lo <= hi <= sec.count) or out.nbytes != want:
                raise ValueError(f"{query}: points [{lo}, {hi}) into a {out.nbytes}-byte buffer")
            if not want:
                return
            view = memoryview(out).cast("B")
            offset = sec.offset + lo * sec.point_size
            got = 0
            with open(self.path, "rb", buffering=0) as f:
                with contextlib.suppress(AttributeError, OSError):
                    os.posix_fadvise(f.fileno(), offset, want, os.POSIX_FADV_SEQUENTIAL)
                while got < want:
                    n = os.preadv(f.fileno(), [view[got:]], offset + got)
                    if n <= 0:
                        raise InputError(
                            self.path,
                            f"{query}[{lo + got // sec.point_size}]",
                            f"the file ends at byte {offset + got} while reading (it was "
                            f"{self.size} bytes when opened): truncated while in use",
                        )
                    got += n

        return read

    def where(self, query: str, index: int) -> str:
        sec = self.sections[query]
        return f"byte offset {sec.offset + index * sec.point_size}"

    # --- access ----------------------------------------------------------
    @property
    def domain_size(self) -> int:
        return self.sections["h"].count + 1

    def raw(self, name: str) -> np.ndarray:
        """The section's encoded points, (count, point size) bytes, still on disk."""
        s = self.sections[name]
        return self._data[s.offset : s.end].reshape(s.count, s.point_size)

    def points(self, name: str) -> np.ndarray:
        """A section in cuzk's limb layout (flags checked; curve checks are :meth:`check`'s)."""
        raw = self.raw(name)
        s = self.sections[name]
        bad = zcash_flag_problem(raw, s.point_size) if s.count else None
        if bad is not None:
            raise InputError(self.path, f"{name}[{bad.index}]", bad.problem)
        return g2_from_zcash(raw) if s.group == "G2" else g1_from_zcash(raw)

    def proving_key(self) -> ProvingKey:
        """Load every section into memory as a :class:`ProvingKey`."""
        return ProvingKey(vk=self.vk, **{name: self.points(name) for name in SECTIONS})

    # --- full validation -------------------------------------------------------
    def check(
        self, progress: ProgressFn | None = None, jobs: int = 1, chunk: int = 1 << 12
    ) -> ParamsProblem | None:
        """Validate every point (encoding, on curve, in subgroup); the first bad one, or None.

        The verifying key was already checked when the file was opened. Points
        are checked in file order, ``chunk`` at a time, over ``jobs``
        processes; ``progress(section, done, total)`` is called after each chunk.
        """
        work = [
            (name, lo, min(lo + chunk, s.count))
            for name, s in self.sections.items()
            for lo in range(0, s.count, chunk)
        ]
        totals = {name: s.count for name, s in self.sections.items()}
        tasks = [(self.path, self.sections[name], lo, hi) for name, lo, hi in work]
        if jobs <= 1:
            results = (_check_chunk(*t) for t in tasks)
            return _first_problem(tasks, results, totals, progress)
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            found = _first_problem(tasks, _ordered_map(pool, tasks, 2 * jobs), totals, progress)
            pool.shutdown(wait=True, cancel_futures=True)
            return found


def _ordered_map(pool: ProcessPoolExecutor, tasks: list, window: int):
    """Results of _check_chunk over tasks, in order, with at most ``window`` in flight.

    Submitting lazily keeps a 47 GiB file's ~10^5 chunks from all being queued
    at once, and lets a bad point found early stop the run.
    """
    pending: deque = deque()
    it = iter(tasks)
    for t in it:
        pending.append(pool.submit(_check_chunk, *t))
        if len(pending) >= window:
            break
    while pending:
        yield pending.popleft().result()
        nxt = next(it, None)
        if nxt is not None:
            pending.append(pool.submit(_check_chunk, *nxt))


def _first_problem(tasks, results, totals, progress) -> ParamsProblem | None:
    for (_, sec, _lo, hi), result in zip(tasks, results, strict=False):
        if result is not None:
            return result
        if progress is not None:
            progress(sec.name, hi, totals[sec.name])
    return None


def _check_chunk(path: str, sec: ParamsSection, lo: int, hi: int) -> ParamsProblem | None:
    """Check points [lo, hi) of one section with the library's validating constructor."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    size = sec.point_size
    raw = data[sec.offset + lo * size : sec.offset + hi * size].reshape(hi - lo, size)
    flag = zcash_flag_problem(raw, size)
    if flag is not None:
        return ParamsProblem(sec.name, lo + flag.index, flag.problem)
    limbs = g1_from_zcash(raw) if sec.group == "G1" else g2_from_zcash(raw)
    flat = limbs.reshape(hi - lo, -1)
    zero = first_true(~flat.any(axis=1))
    if zero is not None:  # (0, 0) would read as infinity in the library: it is off the curve
        return ParamsProblem(sec.name, lo + zero, f"not on the {sec.group} curve")
    make = (pairing.G1Point if sec.group == "G1" else pairing.G2Point).from_xy_bytes_le
    buf = flat.tobytes()
    for i in range(hi - lo):
        try:
            make(buf[i * size : (i + 1) * size])
        except ValueError as e:
            return ParamsProblem(sec.name, lo + i, _classify(str(e), sec.group))
    return None


def _classify(message: str, group: str) -> str:
    if "subgroup" in message:
        return "not in the r-order subgroup"
    if "curve" in message:
        return f"not on the {group} curve"
    return "a coordinate is not below q"


def open_params(path: str | os.PathLike, vk_path: str | os.PathLike | None = None) -> MappedParams:
    """A .params file, opened lazily; with ``vk_path``, the verifying key is the
    .vk file's, which must be the one the .params file starts with (a proof is
    then verified against the key its parameters came with)."""
    params = MappedParams(path)
    if vk_path is not None:
        data = _read_bytes(vk_path)
        vk = vk_from_bytes(data, str(vk_path))
        if data != params.vk_bytes:
            raise InputError(
                str(vk_path),
                "",
                f"is not the verifying key {params.path} starts with: the two files belong "
                "to different keys (a partial download, or files of two versions)",
            )
        params.vk = vk
    return params
