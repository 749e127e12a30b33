"""Bases of an MSM: resident in VRAM or streamed from pinned host memory.

:class:`PreparedBases` is the handle a key keeps. Bases given as an array are
converted once to Montgomery form and kept in VRAM when they fit the device
budget (:func:`prepare`), or as the caller chooses; otherwise they stay in
pinned host memory and MSMs stream them in chunks (:func:`msm_streamed_many`):
one pass over the chunks serves several scalar sets at once (a proof's
partitions), each chunk crossing PCIe once, the upload of the next chunk
overlapping the arithmetic on the current one. :func:`streamed_msm_bytes` is
the device memory such a pass holds. Bases read from a bellperson / zcash key
file (:func:`load`) come in a chunk at a time through two pinned host buffers
and are checked and converted on the device (kernel ``load_zcash``; its
status codes are ``_LOAD_PROBLEMS``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cuzk.backends.base import Compact, Gathered
from cuzk.backends.compact import expand, expand_bytes
from cuzk.backends.cuda.msm.pipeline import Kernels, msm_xyzz
from cuzk.backends.cuda.msm.plan import (
    Tuning,
    _least,
    entries_per_group,
    fit_tuning,
    workspace_bytes,
)
from cuzk.backends.cuda.msm.spec import _U32, G1_SPEC, G2_SPEC, CurveSpec
from cuzk.errors import BadPoint, EncodingError, InputError, ResourceError

if TYPE_CHECKING:
    from cuzk.backends.cuda.msm.engine import MsmEngine

log = logging.getLogger(__name__)


@dataclass(eq=False)
class PreparedBases:
    """Bases made ready for repeated MSMs: resident in VRAM or pinned on the host."""

    spec: CurveSpec
    n: int
    device: Any = None  # flat uint32 Montgomery affine words (cupy), when resident
    pinned: np.ndarray | None = None  # (n, affine_words) uint32, when streamed
    pinned_montgomery: bool = False  # the pinned words are in Montgomery form already
    chunk: int = 0  # points per streamed chunk
    _hold: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    @property
    def resident(self) -> bool:
        return self.device is not None

    @property
    def pinned_bytes(self) -> int:
        """Host bytes of pinned memory these bases hold."""
        return 0 if self.pinned is None else int(self.pinned.nbytes)

    @property
    def device_bytes(self) -> int:
        """VRAM these bases hold (0 when streamed)."""
        return 0 if self.device is None else int(self.device.nbytes)

    def __len__(self) -> int:
        return self.n

    def close(self) -> None:
        """Give the VRAM (or pinned memory) back."""
        self.device = None
        self.pinned = None
        self._hold.close()


# Bytes of key points per chunk while loading (two pinned host buffers of this).
LOAD_CHUNK_BYTES = 192 << 20


def load_staging_bytes(chunk_bytes: int = LOAD_CHUNK_BYTES) -> int:
    """Device bytes a load of bases holds besides them: two raw chunks, their
    status words, and one converted chunk when the bases are streamed."""
    points = chunk_bytes // 96  # G1 points per chunk: the most status words
    return 3 * chunk_bytes + 2 * 4 * points


# msm.cu's load_zcash status codes → (EncodingError reason, problem).
_LOAD_PROBLEMS = {
    1: (EncodingError.FLAGS, "flag bits set (infinity, compressed or sign) in a key point"),
    2: (EncodingError.NON_CANONICAL, "a coordinate is not below q"),
    3: (EncodingError.OFF_CURVE, "not on the {group} curve"),
}


def _check_bases(bases: Any, spec: CurveSpec) -> Any:
    shape = (2, 6) if spec is G1_SPEC else (2, 2, 6)
    if getattr(bases, "ndim", 0) != 1 + len(shape) or tuple(bases.shape[1:]) != shape:
        raise InputError(
            f"{spec.name} MSM", "bases", f"expected an (n, {', '.join(map(str, shape))}) array"
        )
    if bases.dtype != np.uint64:
        raise InputError(f"{spec.name} MSM", "bases", f"expected uint64 limbs, not {bases.dtype}")
    return bases


def to_montgomery(k: Kernels, spec: CurveSpec, dev, n_points: int) -> None:
    """Affine points' coordinates, standard → Montgomery form, in place on the device."""
    count = n_points * spec.affine_words // 12
    k.launch("to_montgomery", count, (dev, np.uint64(count)))


# --- residency -------------------------------------------------------------------


def _must_fit(engine: MsmEngine, spec: CurveSpec, n: int, nbytes: int, extra: int = 0) -> None:
    """:class:`ResourceError` unless resident bases of ``nbytes`` (with ``extra``
    bytes beside them while they are made) fit the free budget."""
    budget = engine.ctx.budget
    free = budget.free_bytes
    if nbytes + extra > free:
        raise ResourceError(
            f"GPU {budget.device_id}: {spec.name} bases asked to be resident need "
            f"{nbytes:,} bytes ({nbytes / 2**30:.2f} GiB) for {n:,} points"
            + (f" and {extra:,} bytes to load them" if extra else "")
            + f"; {free:,} bytes ({free / 2**30:.2f} GiB) of the budget are free"
        )


def _fits(engine: MsmEngine, spec: CurveSpec, n: int, nbytes: int, extra: int = 0) -> bool:
    """Whether bases are made resident when the caller leaves it to the budget:
    the bases (with ``extra``) and the smallest workspace of an MSM over all of
    them (an MSM fits its method to the memory free when it runs, see
    fit_tuning) fit, and no test forces streaming."""
    least = workspace_bytes(spec, max(n, 1), tuning=_least(engine.tuning))
    fits = nbytes + extra + least <= engine.ctx.budget.free_bytes
    return fits and engine.stream_chunk is None


# --- bases given as an array ---------------------------------------------------


def prepare(
    engine: MsmEngine, bases: np.ndarray, spec: CurveSpec, resident: bool | None = None
) -> PreparedBases:
    """Bases given as an array (``MsmEngine.prepare_g1``), converted to Montgomery form.

    ``resident``: None keeps them in VRAM when they fit the free budget, else
    in pinned host memory; True in VRAM (:class:`ResourceError` when they do
    not fit the free budget); False in pinned host memory.
    """
    import cupy

    n = len(bases)
    nbytes = n * spec.affine_bytes
    on_device = not isinstance(bases, np.ndarray)
    if on_device:
        words = cupy.ascontiguousarray(bases).view(_U32).reshape(n, spec.affine_words)
    else:
        words = np.ascontiguousarray(bases).view(_U32).reshape(n, spec.affine_words)
    handle = PreparedBases(spec, n)
    budget = engine.ctx.budget
    if resident is None:
        resident = _fits(engine, spec, n, nbytes)
    elif resident:
        _must_fit(engine, spec, n, nbytes)
    if resident:
        handle._hold.enter_context(budget.reserve(nbytes, f"{spec.name} bases (resident)"))
        with cupy.cuda.Device(engine.ctx.device_id):
            dev = cupy.array(words.reshape(-1), copy=True)  # never convert a caller's array
            to_montgomery(engine.kernels(spec), spec, dev, n)
        handle.device = dev
        log.info("%s bases resident: %d points, %.2f GiB", spec.name, n, nbytes / 2**30)
        return handle
    handle.chunk = engine.stream_chunk or fit_chunk(engine, spec, n)
    mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
    pinned = np.frombuffer(mem, dtype=np.uint32, count=n * spec.affine_words)
    pinned = pinned.reshape(n, spec.affine_words)
    pinned[:] = words.get() if on_device else words
    handle.pinned = pinned
    handle._hold.callback(lambda: mem)  # keep the pinned block alive with the handle
    log.info(
        "%s bases streamed from pinned host memory: %d points in chunks of %d",
        spec.name,
        n,
        handle.chunk,
    )
    return handle


# --- bases from a key file ------------------------------------------------------


def load(
    engine: MsmEngine, spec: CurveSpec, n: int, read, progress, resident: bool | None = None
) -> PreparedBases:
    """Read, upload and convert the bases a chunk at a time (kernel ``load_zcash``).

    Two pinned host buffers of one chunk each are the only host memory: the
    next chunk is read from the file while the device converts the last.
    ``resident`` as in :func:`prepare`: None keeps the bases in VRAM when they
    (with the load's staging and the smallest workspace of an MSM over them)
    fit the free budget, True in VRAM (:class:`ResourceError`, before
    anything is read, when the bases and the staging do not fit), False in
    pinned host memory, which MSMs stream.
    """
    import cupy

    aw, psize = spec.affine_words, spec.affine_bytes
    chunk = max(1, min(n, engine.load_chunk or LOAD_CHUNK_BYTES // psize))
    staging = 2 * chunk * (psize + 4)  # raw chunks and their status words, two of each
    nbytes = n * psize
    budget = engine.ctx.budget
    if resident is None:
        resident = _fits(engine, spec, n, nbytes, staging)
    elif resident:
        _must_fit(engine, spec, n, nbytes, staging)
    handle = PreparedBases(spec, n)
    try:
        with (
            cupy.cuda.Device(engine.ctx.device_id),
            budget.reserve(
                staging + (0 if resident else chunk * psize), f"{spec.name} bases loading"
            ),
        ):
            if resident:
                handle._hold.enter_context(budget.reserve(nbytes, f"{spec.name} bases (resident)"))
                dest = cupy.empty(max(n, 1) * aw, dtype=_U32)
            else:
                mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
                handle._hold.callback(lambda: mem)
                handle.pinned = np.frombuffer(mem, dtype=_U32, count=n * aw).reshape(n, aw)
                handle.pinned_montgomery = True
                handle.chunk = engine.stream_chunk or fit_chunk(engine, spec, n)
                dest = cupy.empty(chunk * aw, dtype=_U32)
            _load_chunks(engine, spec, n, chunk, read, progress, dest, handle, resident)
            if resident:
                handle.device = dest
    except BaseException:
        handle.close()
        raise
    log.info(
        "%s bases loaded: %d points, %.2f GiB, %s",
        spec.name,
        n,
        nbytes / 2**30,
        "resident" if resident else f"streamed in chunks of {handle.chunk}",
    )
    return handle


def _load_chunks(engine: MsmEngine, spec, n, chunk, read, progress, dest, handle, resident) -> None:
    import cupy

    aw, psize = spec.affine_words, spec.affine_bytes
    k = engine.kernels(spec)
    host = []
    for _ in range(2):
        mem = cupy.cuda.alloc_pinned_memory(chunk * psize)
        host.append(np.frombuffer(mem, dtype=np.uint8, count=chunk * psize).reshape(chunk, psize))
    raw = [cupy.empty(chunk * aw, dtype=_U32) for _ in range(2)]
    status = [cupy.empty(chunk, dtype=_U32) for _ in range(2)]
    stream = cupy.cuda.Stream(non_blocking=True)

    def finish(lo: int, hi: int, b: int) -> None:
        stream.synchronize()
        bad = cupy.flatnonzero(status[b][: hi - lo])
        if len(bad):
            i = int(bad[0])
            code = int(status[b][i])
            reason, problem = _LOAD_PROBLEMS[code]
            raise BadPoint(lo + i, reason, problem.format(group=spec.name))
        if not resident:
            handle.pinned[lo:hi] = dest[: (hi - lo) * aw].reshape(hi - lo, aw).get()
        if progress is not None:
            progress(hi)

    pending = None
    for i, lo in enumerate(range(0, n, chunk)):
        hi = min(n, lo + chunk)
        b = i % 2
        read(lo, hi, host[b][: hi - lo])  # the file read overlaps the last chunk's upload
        if pending is not None:
            finish(*pending)
        with stream:
            raw[b][: (hi - lo) * aw].set(host[b][: hi - lo].view(_U32).reshape(-1), stream=stream)
            out = dest[lo * aw : hi * aw] if resident else dest
            k.launch("load_zcash", hi - lo, (raw[b], _U32(hi - lo), out, status[b]))
        pending = (lo, hi, b)
    if pending is not None:
        finish(*pending)


# --- MSMs over streamed bases -----------------------------------------------------

# Bytes of bases a streamed chunk holds at most: 2^22 G1 points, 2^21 G2 points.
# Pippenger's window is then 17-18 bits (20 at 2^24), and a pass holds about
# 5.7 GiB (G1) / 6.0 GiB (G2) at the default tuning (streamed_msm_bytes), less
# where fit_tuning cuts the workspace down.
STREAM_CHUNK_BYTES = 1536 << 20


def stream_chunk_max(spec: CurveSpec) -> int:
    """The most points of a streamed chunk: STREAM_CHUNK_BYTES of points,
    rounded down to a power of two."""
    return 1 << ((STREAM_CHUNK_BYTES // spec.affine_bytes).bit_length() - 1)


# Points per streamed chunk at most, by group.
STREAM_CHUNK_MAX = {spec.name: stream_chunk_max(spec) for spec in (G1_SPEC, G2_SPEC)}


def _pass_fixed_bytes(spec: CurveSpec, chunk: int, sets: int) -> int:
    """A pass's memory besides the chunk MSM's workspace: two staging chunks
    and, per set, its running sum and the sum that replaces it."""
    return 2 * chunk * spec.affine_bytes + 2 * sets * spec.xyzz_bytes


def streamed_msm_bytes(
    spec: CurveSpec,
    chunk: int,
    sets: int = 1,
    tuning: Tuning | None = None,
    on_host: bool = False,
) -> int:
    """Device bytes a pass over streamed bases (:func:`msm_streamed_many`) holds
    with chunks of ``chunk`` points for ``sets`` scalar sets: two staging
    chunks, the workspace of one chunk's MSM at ``tuning`` (None: the default
    :class:`Tuning`; ``on_host``: scalars uploaded from the host a chunk at a
    time) and two points a set. What a memory planner reserves for the pass;
    the pass reserves no more for its chunk (fewer when the budget is short
    and its tuning is cut down)."""
    work = workspace_bytes(spec, max(chunk, 1), on_host, tuning or Tuning())
    return _pass_fixed_bytes(spec, chunk, sets) + work


# How far fit_chunk goes below the largest chunk that fits: a quarter of it.
CHUNK_CHOICES = 4


def fit_chunk(
    engine: MsmEngine,
    spec: CurveSpec,
    n: int,
    room: int | None = None,
    on_host: bool = True,
    beside: Callable[[int], int] | None = None,
) -> int:
    """Points per streamed chunk of bases of n points, for a pass of one set in
    ``room`` bytes (None: the free budget); ``on_host``: its scalars uploaded
    from the host a chunk at a time; ``beside(chunk)``: bytes the pass holds
    beyond one set's with chunks of that size (more sets' points, compact
    sets' expansion: :func:`compact_expand_bytes`), fitted within the room too
    (a side branch's share holds all of it).

    The largest chunk up to :func:`stream_chunk_max` whose pass fits at one
    window a group (the affine method's least; halved, not below 1024, until
    it does). When the room cuts that chunk's MSM down to one window a group
    (or to the XYZZ walk), half the chunk (then a quarter) is taken instead if
    its MSM sums several windows a group: measured on the H200 (G1 2^26
    streamed, 2026-12-04, BENCHMARKS.md "Residency tiers"), chunks of 2^23 in
    one-window groups took 101 ms per 2^22 points, chunks of 2^22 in groups
    of three 83 ms, in the same 3.2 GiB of room.
    """
    room = engine.ctx.budget.free_bytes if room is None else room
    more = beside if beside is not None else (lambda c: 0)
    chunk = max(1, min(n, stream_chunk_max(spec)))
    # the smallest workspace that keeps the affine method (one window a group):
    # a chunk half the size costs less than the XYZZ walk over a large one
    least = _least(engine.tuning)
    if engine.tuning.method == "affine":
        least = dataclasses.replace(engine.tuning, group_windows=1)
    while chunk > 1024 and streamed_msm_bytes(spec, chunk, 1, least, on_host) + more(chunk) > room:
        chunk //= 2

    def windows_a_group(c: int) -> int:
        """Windows a group of this chunk's MSM sums in the room (0: XYZZ walk)."""
        free = room - _pass_fixed_bytes(spec, c, 1) - more(c)
        t = fit_tuning(spec, c, engine.tuning, free, on_host, quiet=True)
        if t.method != "affine" or streamed_msm_bytes(spec, c, 1, t, on_host) + more(c) > room:
            return 0
        return entries_per_group(spec, c, t) // c

    floor = max(1024, chunk // CHUNK_CHOICES)
    while chunk // 2 >= floor and windows_a_group(chunk) <= 1 < windows_a_group(chunk // 2):
        chunk //= 2
    return chunk


def _on_host(a: Any) -> bool:
    """Whether an array is in host memory (numpy's have no ``get``; CuPy's do)."""
    return isinstance(a, np.ndarray) and not hasattr(a, "get")


def _made_per_chunk(scalars: Any) -> bool:
    """Whether a pass makes each chunk's scalars as a new device array: host
    ones uploaded, :class:`~cuzk.backends.base.Gathered` ones taken by their
    index, :class:`~cuzk.backends.base.Compact` ones expanded (the pass's
    workspace holds a chunk of them)."""
    return _on_host(scalars) or isinstance(scalars, (Gathered, Compact))


def rows(cupy, scalars: Any, lo: int, hi: int) -> Any:
    """Scalars lo … hi − 1 of a set: a gathered set's taken by its index's slice
    where its values are (the device's ``take``; numpy's on the host), a
    compact set's expanded on the device from its bits and full values."""
    if isinstance(scalars, Gathered):
        xp = np if _on_host(scalars.values) else cupy
        return xp.take(scalars.values, scalars.index[lo:hi], axis=0)
    if isinstance(scalars, Compact):
        return expand(cupy, scalars, lo, hi)
    return scalars[lo:hi]


def whole(cupy, scalars: Any) -> Any:
    """A set's scalars as one array: a gathered set gathered whole, a compact
    one expanded whole (beside resident bases, whose MSM takes the set at once)."""
    if isinstance(scalars, (Gathered, Compact)):
        return rows(cupy, scalars, 0, len(scalars))
    return scalars


def compact_expand_bytes(scalar_sets: list, chunk: int) -> int:
    """Device bytes a pass with chunks of ``chunk`` entries holds to expand its
    :class:`~cuzk.backends.base.Compact` sets beside a chunk's dense scalars
    (one set at a time: the most any chunk of any of them takes)."""
    sets = [s for s in scalar_sets if isinstance(s, Compact)]
    return max((expand_bytes(chunk, s.most_full(chunk)) for s in sets), default=0)


class _Clock:
    """Optional GPU timings of a pass: spans between events on one stream,
    summed per phase into ``timings`` once the pass is done."""

    def __init__(self, cupy, timings: dict | None) -> None:
        self.cupy, self.out = cupy, timings
        self.spans: list[tuple[str, Any, Any]] = []

    def mark(self, stream):
        if self.out is None:
            return None
        ev = self.cupy.cuda.Event()
        ev.record(stream)
        return ev

    def span(self, name: str, start, end) -> None:
        if self.out is not None:
            self.spans.append((name, start, end))

    def finish(self) -> None:
        for name, a, b in self.spans:
            b.synchronize()
            ms = self.cupy.cuda.get_elapsed_time(a, b)
            self.out[name] = self.out.get(name, 0.0) + ms


def _fold(cupy, k: Kernels, spec: CurveSpec, acc, part):
    """acc + part (XYZZ words) on the device: ``finalize`` with part as its one
    window (no doublings) and acc as its one extra point."""
    if acc is None:
        return part
    out = cupy.empty(spec.xyzz_words, dtype=_U32)
    k.launch("finalize", 1, (part, _U32(1), _U32(0), acc, _U32(1), out), block=1)
    return out


def msm_streamed_many(
    engine: MsmEngine, handle: PreparedBases, scalar_sets: list, k: Kernels, timings=None
) -> list:
    """MSMs of several scalar sets over pinned bases in one pass over the chunks.

    Each chunk of the bases is uploaded once (double-buffered on a copy
    stream, the next chunk's upload overlapping the current one's
    arithmetic), converted once when the pinned words are standard, and every
    set with scalars in it runs its chunk MSM on it; each set's chunk sums are
    added on the device. A :class:`~cuzk.backends.base.Gathered` set's
    chunk is taken from its values by the index's slice for the chunk, so no
    gathered vector of the whole set is made; a
    :class:`~cuzk.backends.base.Compact` set's chunk is expanded on the
    device from its bits and full values (uploaded from host memory, found in
    O(1)), beside :func:`compact_expand_bytes` more in the reservation.
    Returns one XYZZ point (Montgomery words on the device) a set. The pass
    reserves :func:`streamed_msm_bytes` of its chunk at the tuning
    :func:`.plan.fit_tuning` fits to the free budget; host scalars are
    uploaded a chunk at a time. ``timings``, when given, receives
    milliseconds per phase: ``upload`` (copies of the bases), ``upload_wait``
    (the arithmetic waiting for them), ``arithmetic`` (a chunk's work, the
    conversion and the MSMs), ``upload_scalars``, ``gather`` (a gathered
    set's chunks taken on the device), ``expand`` (a compact set's) and the
    pipeline's phases.
    """
    import cupy

    spec = handle.spec
    xw, aw = spec.xyzz_words, spec.affine_words
    sets = len(scalar_sets)
    lengths = [int(s.shape[0]) for s in scalar_sets]
    longest = max(lengths, default=0)
    if longest == 0:  # nothing to stream: each sum is the point at infinity
        return [cupy.zeros(xw, dtype=_U32) for _ in range(sets)]
    on_host = any(_made_per_chunk(s) for s in scalar_sets)

    # the chunk fits the memory free now (a lean partition's room), not at the load
    def beside(c: int) -> int:  # the other sets' points, the compact sets' expansion
        more = _pass_fixed_bytes(spec, c, sets) - _pass_fixed_bytes(spec, c, 1)
        return more + compact_expand_bytes(scalar_sets, c)

    fitted = engine.stream_chunk or fit_chunk(engine, spec, longest, on_host=on_host, beside=beside)
    chunk = max(1, min(fitted, longest))
    starts = list(range(0, longest, chunk))
    budget = engine.ctx.budget
    fixed = _pass_fixed_bytes(spec, chunk, sets) + compact_expand_bytes(scalar_sets, chunk)
    tuning = fit_tuning(spec, chunk, engine.tuning, budget.free_bytes - fixed, on_host)
    need = fixed + workspace_bytes(spec, chunk, on_host, tuning)
    with budget.reserve(need, f"msm_{spec.name.lower()} streamed"):
        copy_stream = cupy.cuda.Stream(non_blocking=True)
        compute = cupy.cuda.get_current_stream()
        clock = _Clock(cupy, timings)
        staging = [cupy.empty(chunk * aw, dtype=_U32) for _ in range(2)]
        free_again = [None, None]  # compute-stream events: staging buffer no longer read
        uploaded = [None, None]
        sums: list = [None] * sets

        def upload(i: int) -> None:
            b = i % 2
            lo = starts[i]
            hi = min(lo + chunk, longest)
            with copy_stream:
                if free_again[b] is not None:
                    copy_stream.wait_event(free_again[b])
                begun = clock.mark(copy_stream)
                staging[b][: (hi - lo) * aw].set(
                    handle.pinned[lo:hi].reshape(-1), stream=copy_stream
                )
                uploaded[b] = copy_stream.record()
            clock.span("upload", begun, uploaded[b])

        try:
            upload(0)
            for i, lo in enumerate(starts):
                hi = min(lo + chunk, longest)
                b = i % 2
                waiting = clock.mark(compute)
                compute.wait_event(uploaded[b])
                begun = clock.mark(compute)
                clock.span("upload_wait", waiting, begun)
                if i + 1 < len(starts):
                    upload(i + 1)  # overlaps the arithmetic below
                if not handle.pinned_montgomery:
                    to_montgomery(k, spec, staging[b], hi - lo)
                for j, scalars in enumerate(scalar_sets):
                    top = min(hi, lengths[j])
                    if top <= lo:
                        continue
                    made = isinstance(scalars, (Gathered, Compact))
                    taken = clock.mark(compute) if made else None
                    part = rows(cupy, scalars, lo, top)
                    if taken is not None and not _on_host(part):
                        what = "gather" if isinstance(scalars, Gathered) else "expand"
                        clock.span(what, taken, clock.mark(compute))
                    if _on_host(part):
                        sent = clock.mark(compute)
                        part = cupy.asarray(np.ascontiguousarray(part))
                        clock.span("upload_scalars", sent, clock.mark(compute))
                    else:
                        part = cupy.ascontiguousarray(part)
                    got = msm_xyzz(cupy, k, spec, staging[b], part, tuning, timings)
                    sums[j] = _fold(cupy, k, spec, sums[j], got)
                    del part, got
                free_again[b] = compute.record()
                clock.span("arithmetic", begun, free_again[b])
        finally:
            copy_stream.synchronize()  # no copy may land in freed staging
        out = [cupy.zeros(xw, dtype=_U32) if s is None else s for s in sums]
        compute.synchronize()
        clock.finish()
        return out


def msm_streamed(engine: MsmEngine, handle: PreparedBases, scalars, k: Kernels, timings=None):
    """One MSM over pinned bases: the one-set case of :func:`msm_streamed_many`."""
    return msm_streamed_many(engine, handle, [scalars], k, timings)[0]
