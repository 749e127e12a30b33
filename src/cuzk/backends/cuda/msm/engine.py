"""The MSM engine of one device: :class:`MsmEngine`, the backend's entry point.

It compiles ``kernels/msm.cu`` per group, keeps the bases (:mod:`.bases`),
fits each MSM's tuning to the memory free when it runs (:mod:`.plan`), runs
the pipeline (:mod:`.pipeline`) and the fixed-base products of parameter
generation (:mod:`.fixed_base`); all its memory goes through the device
context's budget.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.backends.cuda.msm import bases as _bases
from cuzk.backends.cuda.msm.bases import PreparedBases, _check_bases
from cuzk.backends.cuda.msm.fixed_base import fixed_base_multiples
from cuzk.backends.cuda.msm.pipeline import _check_scalars, _to_host, msm_xyzz, xyzz_to_affine
from cuzk.backends.cuda.msm.plan import (
    MsmPlan,
    Tuning,
    classify_bytes,
    plan_msm,
)
from cuzk.backends.cuda.msm.spec import G1_SPEC, G2_SPEC, CurveSpec
from cuzk.backends.cuda.tuning import MSM_BLOCK
from cuzk.errors import InputError


class _Slice(Exception):
    """An MSM that the free memory would cut down to the XYZZ walk runs in
    slices of ``points`` scalars instead, each with the affine method."""

    def __init__(self, points: int) -> None:
        self.points = points


KERNEL_MODULE = "msm.cu"  # with each CurveSpec's defines (cuzk.backends.cuda.kernels)


class _CupyKernels:
    def __init__(self, module) -> None:
        self._module = module
        self._functions: dict[str, Any] = {}

    def launch(self, name: str, threads: int, args: tuple, block: int = MSM_BLOCK) -> None:
        f = self._functions.get(name)
        if f is None:
            f = self._functions[name] = self._module.get_function(name)
        if threads <= 0:
            return
        f((-(-threads // block),), (block,), args)


class MsmEngine:
    """G1 / G2 MSMs on one device, all memory through its :class:`DeviceContext` budget."""

    def __init__(
        self,
        ctx,
        tuning: Tuning = Tuning(),
        stream_chunk: int | None = None,
        load_chunk: int | None = None,
    ) -> None:
        self.ctx = ctx
        self.load_chunk = load_chunk  # points per chunk while loading bases (tests)
        self.tuning = tuning
        self.stream_chunk = stream_chunk  # forces streaming with this chunk (tests)
        self._kernels: dict[str, _CupyKernels] = {}
        # the plan of the last resident MSM (or slice) run (benchmark rows show it)
        self.last_plan: MsmPlan | None = None
        self.fixed_base_tables: dict[tuple[str, str], Any] = {}

    def kernels(self, spec: CurveSpec) -> _CupyKernels:
        k = self._kernels.get(spec.name)
        if k is None:
            module = self.ctx.module(KERNEL_MODULE, spec.defines)
            k = self._kernels[spec.name] = _CupyKernels(module)
        return k

    # --- bases ----------------------------------------------------------------
    def prepare_g1(self, bases: np.ndarray, resident: bool | None = None) -> PreparedBases:
        """G1 bases given as an array; ``resident``: None by the free budget,
        True in VRAM (ResourceError when they do not fit), False pinned on the host."""
        return _bases.prepare(self, _check_bases(bases, G1_SPEC), G1_SPEC, resident)

    def prepare_g2(self, bases: np.ndarray, resident: bool | None = None) -> PreparedBases:
        """G2 bases given as an array; ``resident`` as in :meth:`prepare_g1`."""
        return _bases.prepare(self, _check_bases(bases, G2_SPEC), G2_SPEC, resident)

    # --- bases from a key file ------------------------------------------------------
    def load_g1(
        self, count: int, read, progress=None, resident: bool | None = None
    ) -> PreparedBases:
        """G1 bases streamed from ``read`` (the backend contract's ``load_g1``);
        ``resident`` as in :meth:`prepare_g1`."""
        return _bases.load(self, G1_SPEC, count, read, progress, resident)

    def load_g2(
        self, count: int, read, progress=None, resident: bool | None = None
    ) -> PreparedBases:
        """G2 bases streamed from ``read``; ``resident`` as in :meth:`prepare_g1`."""
        return _bases.load(self, G2_SPEC, count, read, progress, resident)

    # --- MSMs -------------------------------------------------------------------
    def msm_g1(self, handle: PreparedBases, scalars, timings: dict | None = None) -> Affine:
        return self._msm(handle, scalars, G1_SPEC, timings)

    def msm_g2(self, handle: PreparedBases, scalars, timings: dict | None = None) -> Affine:
        return self._msm(handle, scalars, G2_SPEC, timings)

    def msm_xyzz(self, handle: PreparedBases, scalars, timings: dict | None = None):
        """The MSM as XYZZ Montgomery words on the device (no host conversion).

        ``timings``, when given, receives milliseconds per pipeline phase.
        """
        import cupy

        spec = handle.spec
        _check_scalars(scalars, handle.n, spec)
        k = self.kernels(spec)
        with cupy.cuda.Device(self.ctx.device_id):
            if not handle.resident:
                return _bases.msm_streamed(self, handle, scalars, k, timings)
            return self._msm_resident(handle, scalars, k, timings)

    def msm_many(
        self,
        handle: PreparedBases,
        scalar_sets: list,
        timings: dict | None = None,
        spec: CurveSpec | None = None,
    ) -> list[Affine]:
        """Σ sᵢ·Pᵢ for each scalar set over the same bases (G1 or G2 by ``handle.spec``).

        Each set: host or device (n_j, 4) uint64, n_j ≤ ``handle.n``, or a
        :class:`~cuzk.backends.base.Gathered` set of n_j rows (gathered whole
        beside resident bases, a chunk at a time beside streamed ones). Resident
        bases: one MSM a set (as :meth:`msm_g1`). Streamed bases: one pass over
        the chunks serves every set, each chunk crossing PCIe once
        (:func:`.bases.msm_streamed_many`). ``timings``, when given, receives
        milliseconds per phase summed over the sets (``upload_wait`` and
        ``arithmetic`` among them). ``spec``, when given, is the group the caller
        means: InputError when the bases are the other one's.
        """
        if spec is not None:
            _check_group(handle, spec)
        spec = handle.spec
        return [
            xyzz_to_affine(_to_host(w), spec)
            for w in self.msm_xyzz_many(handle, scalar_sets, timings)
        ]

    def msm_xyzz_many(
        self, handle: PreparedBases, scalar_sets: list, timings: dict | None = None
    ) -> list:
        """:meth:`msm_many` as XYZZ Montgomery words on the device (no host conversion)."""
        import cupy

        spec = handle.spec
        for scalars in scalar_sets:
            _check_scalars(scalars, handle.n, spec)
        if not scalar_sets:
            return []
        k = self.kernels(spec)
        with cupy.cuda.Device(self.ctx.device_id):
            if not handle.resident:
                return _bases.msm_streamed_many(self, handle, list(scalar_sets), k, timings)
            out = []
            compute = cupy.cuda.get_current_stream()
            clock = _bases._Clock(cupy, timings)
            for scalars in scalar_sets:
                begun = clock.mark(compute)
                # a gathered set whole, one set at a time (resident bases: one MSM a set)
                out.append(self._msm_resident(handle, _bases.whole(cupy, scalars), k, timings))
                clock.span("arithmetic", begun, clock.mark(compute))
            if timings is not None:
                timings.setdefault("upload_wait", 0.0)  # resident bases: nothing to wait for
            clock.finish()
            return out

    def _msm_resident(self, handle: PreparedBases, scalars, k, timings: dict | None):
        """One MSM over resident bases, its workspace reserved for the scalars'
        counts; in slices summed on the device where the free memory would
        cut one MSM down to the XYZZ walk (a lean partition's room)."""
        import cupy

        spec = handle.spec
        n = int(scalars.shape[0])
        on_host = _bases._on_host(scalars)
        try:
            return self._msm_whole(handle, scalars, k, timings, n, on_host)
        except _Slice as cut:
            part = cut.points
        acc = None
        aw = spec.affine_words
        for lo in range(0, n, part):
            hi = min(n, lo + part)
            view = PreparedBases(spec, hi - lo, device=handle.device[lo * aw : hi * aw])
            got = self._msm_resident(view, scalars[lo:hi], k, timings)
            acc = _bases._fold(cupy, k, spec, acc, got)
        return acc

    def _msm_whole(self, handle: PreparedBases, scalars, k, timings, n: int, on_host: bool):
        """One pipeline run over all of ``scalars`` (raises :class:`_Slice` when the
        memory free would cut it down to the XYZZ walk and slices would not be)."""
        import cupy

        spec = handle.spec
        # Two reservations: the classification's, then the workspace of
        # the counts it found (a witness's L, A and B scalars are mostly
        # zeros and ones: a bound for n full scalars would hold ≈ 17
        # GiB at 32GiB PoRep's size for what takes a few).
        budget, name = self.ctx.budget, spec.name.lower()
        first = classify_bytes(n, on_host)
        with budget.reserve(first, f"msm_{name} scalars"):
            if on_host:  # a pageable upload: the prover gathers on the device instead
                t = time.perf_counter()
                s = cupy.asarray(np.ascontiguousarray(scalars))
                if timings is not None:
                    cupy.cuda.get_current_stream().synchronize()
                    up = (time.perf_counter() - t) * 1000
                    timings["upload_scalars"] = timings.get("upload_scalars", 0.0) + up
            else:
                s = scalars

            def plan(n_ones: int, n_full: int):
                counts = (n_ones, n_full)
                free = budget.free_bytes + first
                p = plan_msm(
                    spec, n, self.tuning, free, self._sort_room(free, first), on_host, counts
                )
                # beside another line of work (CudaBackend.fork) more window
                # groups are taken, but not the XYZZ method: an MSM the
                # cap would cut down to it waits for the cap to lift
                if p.cut and budget.await_lift():
                    free = budget.free_bytes + first
                    room = self._sort_room(free, first)
                    p = plan_msm(spec, n, self.tuning, free, room, on_host, counts)
                if p.sliced:
                    raise _Slice(p.slice_points)
                self.last_plan = p
                need = p.workspace_bytes - first
                return p.tuning, budget.reserve(need, f"msm_{name} workspace")

            return msm_xyzz(cupy, k, spec, handle.device, s, self.tuning, timings, plan)

    def _sort_room(self, free: int, held: int) -> int | None:
        """The room :func:`.plan.choose_sort` may give the points' sort: none
        inside a reservation (whose estimate counts the index sort's
        workspace); else the free budget (``free``, with the ``held`` bytes of
        the classification), within what the memory pool has left, since
        arrays a caller holds without a reservation (a standalone prover's
        assignment and h) are in the pool's use, not in the budget's."""
        if self.ctx.budget.envelope() is not None:
            return None
        pool = getattr(self.ctx, "pool", None)
        limit = pool.get_limit() if pool is not None else 0
        return min(free, limit - pool.used_bytes() + held) if limit else free

    def _msm(
        self, handle: PreparedBases, scalars, spec: CurveSpec, timings: dict | None = None
    ) -> Affine:
        _check_group(handle, spec)
        return xyzz_to_affine(_to_host(self.msm_xyzz(handle, scalars, timings)), spec)

    # --- fixed-base multiples (parameter generation) -------------------------------
    def fixed_base_g1(self, point: Affine, scalars, to_host: bool = True):
        """sᵢ·P for every scalar: an (n, 2, 6) uint64 array of affine points."""
        return fixed_base_multiples(self, G1_SPEC, point, scalars, to_host)

    def fixed_base_g2(self, point: Affine, scalars, to_host: bool = True):
        """sᵢ·Q for every scalar: an (n, 2, 2, 6) uint64 array."""
        return fixed_base_multiples(self, G2_SPEC, point, scalars, to_host)


def _check_group(handle: PreparedBases, spec: CurveSpec) -> None:
    """InputError unless the bases were prepared for ``spec``'s group."""
    if handle.spec is not spec:
        raise InputError(f"{spec.name} MSM", "bases", f"prepared for {handle.spec.name}")
