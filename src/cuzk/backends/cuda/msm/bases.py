"""Bases of an MSM: resident in VRAM or streamed from pinned host memory.

:class:`PreparedBases` is the handle a key keeps. Bases given as an array are
converted once to Montgomery form and kept in VRAM when they fit the device
budget (:func:`prepare`); otherwise they stay in pinned host memory and each
MSM streams them in chunks (:func:`msm_streamed`), the upload of the next
chunk overlapping the arithmetic on the current one. Bases read from a
bellperson / zcash key file (:func:`load`) come in a chunk at a time through
two pinned host buffers and are checked and converted on the device (kernel
``load_zcash``; its status codes are ``_LOAD_PROBLEMS``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cuzk.backends.cuda.msm.pipeline import Kernels, _empty_scalars, msm_xyzz
from cuzk.backends.cuda.msm.plan import _least, fit_tuning, workspace_bytes
from cuzk.backends.cuda.msm.spec import _U32, G1_SPEC, CurveSpec
from cuzk.errors import BadPoint, EncodingError, InputError

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


# --- bases given as an array ---------------------------------------------------


def prepare(engine: MsmEngine, bases: np.ndarray, spec: CurveSpec) -> PreparedBases:
    """Bases given as an array, resident or pinned (``MsmEngine.prepare_g1``)."""
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
    # Resident when the bases and the workspace of an MSM over all of them fit
    # (the smallest workspace, the XYZZ method's: an MSM fits its method to
    # the memory free when it runs, see fit_tuning).
    least = workspace_bytes(spec, max(n, 1), tuning=_least(engine.tuning))
    fits = nbytes + least <= budget.free_bytes
    if fits and engine.stream_chunk is None:
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


def load(engine: MsmEngine, spec: CurveSpec, n: int, read, progress) -> PreparedBases:
    """Read, upload and convert the bases a chunk at a time (kernel ``load_zcash``).

    Two pinned host buffers of one chunk each are the only host memory: the
    next chunk is read from the file while the device converts the last.
    Resident when the bases (and the smallest workspace of an MSM over
    them) fit the free budget, as :meth:`_prepare` decides; else the
    converted words go to pinned host memory and MSMs stream them.
    """
    import cupy

    aw, psize = spec.affine_words, spec.affine_bytes
    chunk = max(1, min(n, engine.load_chunk or LOAD_CHUNK_BYTES // psize))
    staging = 2 * chunk * (psize + 4)  # raw chunks and their status words, two of each
    nbytes = n * psize
    budget = engine.ctx.budget
    least = workspace_bytes(spec, max(n, 1), tuning=_least(engine.tuning))
    resident = engine.stream_chunk is None and nbytes + staging + least <= budget.free_bytes
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


def fit_chunk(engine: MsmEngine, spec: CurveSpec, n: int) -> int:
    free = engine.ctx.budget.free_bytes
    chunk = max(1, n)
    least = _least(engine.tuning)
    # Two staging buffers plus one chunk's workspace must fit.
    while chunk > 1024 and (
        2 * chunk * spec.affine_bytes + workspace_bytes(spec, chunk, tuning=least) > free
    ):
        chunk //= 2
    return chunk


# --- MSMs over streamed bases -----------------------------------------------------


def msm_streamed(engine: MsmEngine, handle: PreparedBases, scalars, n: int, k: Kernels):
    """An MSM over pinned bases: one pipeline run per chunk, the upload of the
    next chunk overlapping the current one's, the chunk sums combined on the device."""
    import cupy

    spec = handle.spec
    chunk = handle.chunk
    xw = spec.xyzz_words
    starts = list(range(0, n, chunk))
    if not starts:
        return msm_xyzz(cupy, k, spec, cupy.zeros(1, dtype=_U32), _empty_scalars(cupy))
    staging_bytes = 2 * chunk * spec.affine_bytes
    free = engine.ctx.budget.free_bytes - staging_bytes
    tuning = fit_tuning(spec, chunk, engine.tuning, free)
    need = staging_bytes + workspace_bytes(spec, chunk, tuning=tuning)
    with engine.ctx.budget.reserve(need, f"msm_{spec.name.lower()} streamed"):
        copy_stream = cupy.cuda.Stream(non_blocking=True)
        compute = cupy.cuda.get_current_stream()
        staging = [cupy.empty(chunk * spec.affine_words, dtype=_U32) for _ in range(2)]
        free_again = [None, None]  # compute-stream events: staging buffer no longer read
        uploaded = [None, None]
        results = []

        def upload(i: int) -> None:
            b = i % 2
            lo = starts[i]
            hi = min(lo + chunk, n)
            with copy_stream:
                if free_again[b] is not None:
                    copy_stream.wait_event(free_again[b])
                staging[b][: (hi - lo) * spec.affine_words].set(
                    handle.pinned[lo:hi].reshape(-1), stream=copy_stream
                )
                uploaded[b] = copy_stream.record()

        upload(0)
        for i, lo in enumerate(starts):
            hi = min(lo + chunk, n)
            b = i % 2
            compute.wait_event(uploaded[b])
            if i + 1 < len(starts):
                upload(i + 1)  # overlaps the arithmetic below
            if not handle.pinned_montgomery:
                to_montgomery(k, spec, staging[b], hi - lo)
            part = scalars[lo:hi]
            s = cupy.asarray(np.ascontiguousarray(part)) if isinstance(part, np.ndarray) else part
            results.append(msm_xyzz(cupy, k, spec, staging[b], s, tuning))
            free_again[b] = compute.record()
        extra = cupy.concatenate(results)
        out = cupy.empty(xw, dtype=_U32)
        k.launch(
            "finalize",
            1,
            (cupy.zeros(xw, dtype=_U32), _U32(0), _U32(0), extra, _U32(len(results)), out),
            block=1,
        )
        compute.synchronize()
        return out
