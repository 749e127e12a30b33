"""The CUDA backend: the CPU backend's contract, bit for bit, on one GPU.

Fr arrays cross the boundary as ``(n, 4)`` uint64 standard-form limbs, numpy
or CuPy; results stay on the device as CuPy arrays until :meth:`to_host`.
Inputs need not be canonical: every kernel that reads caller data reduces it
mod r first, as the CPU reference does. MSMs are delegated to
:class:`cuzk.backends.cuda.msm.MsmEngine`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends import compact as _compact
from cuzk.backends.base import Compact, Gathered
from cuzk.backends.cuda.fr import FrKernels, check_fr_shape
from cuzk.backends.cuda.hpoly import HPoly, h_odd_coset
from cuzk.backends.cuda.memory import Cap, DeviceContext
from cuzk.backends.cuda.model import MODEL
from cuzk.backends.cuda.ntt import NttEngine
from cuzk.backends.cuda.spmv import DeviceCsr, SpmvEngine, StreamedCsr

log = logging.getLogger(__name__)


class DeviceIndex:
    """A resident index array and its hold on the device budget."""

    def __init__(self, array: Any, hold: Any) -> None:
        self.array, self.hold = array, hold

    def __len__(self) -> int:
        return len(self.array)

    def close(self) -> None:
        self.array = None
        self.hold.release()


class Branch:
    """Work beside the thread that made it (:meth:`CudaBackend.fork`)."""

    def __init__(self, be, origin, side, ready, envelope, cap: Cap) -> None:
        self.be, self.origin, self.side, self.ready = be, origin, side, ready
        self.envelope, self.cap = envelope, cap
        self._thread: threading.Thread | None = None
        self._result: Any = None
        self._error: BaseException | None = None
        self._done: Any = None

    def start(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` in the branch's thread, on its stream."""
        if self._thread is not None:
            raise RuntimeError("a branch runs one function")
        self._thread = threading.Thread(target=self._run, args=(fn,), name="cuzk-side", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        be = self.be
        cp, budget = be.cp, be.ctx.budget
        try:
            with ExitStack() as stack:
                stack.enter_context(be._device())
                self.side.wait_event(self.ready)
                stack.enter_context(self.side)
                if self.envelope is not None and not self.envelope.released:
                    stack.enter_context(budget.drawing_from(self.envelope))
                stack.enter_context(budget.capped(self.cap))
                try:
                    self._result = fn()
                finally:
                    self._done = cp.cuda.Event(disable_timing=True)
                    self._done.record(self.side)
        except BaseException as e:  # raised again in the joining thread
            self._error = e

    def join(self) -> Any:
        """Lift the branch's cap (the calling thread's own work is done: what the
        branch waits for to size its work is free), wait for the branch (its
        thread and its stream's work, which the calling stream then waits for
        too) and return what its function returned, or raise what it raised.
        A branch forked within a fixed room keeps its final cap (the rest of
        the room is held by live vectors), and the calling thread gets its
        whole room back. Called by the thread that forked."""
        self.be.ctx.budget.rejoin(self.cap)
        if self._thread is None:
            raise RuntimeError("join: the branch was never started")
        self._thread.join()
        if self._done is not None:
            with self.be._device():
                self.origin.wait_event(self._done)
        err, self._error = self._error, None
        if err is not None:
            # no cycle (exception, traceback, this frame, the branch) keeps the
            # branch's frames and their device arrays alive after it is handled
            try:
                raise err
            finally:
                err = None
        return self._result


class CudaBackend:
    """One GPU: its budget, kernels and resident data.

    ``limit_bytes`` / ``budget_fraction`` size the VRAM budget (see
    :class:`DeviceContext`); ``full_tables`` forces the NTT's power tables
    to full (True) or split (False) form instead of choosing by size.
    """

    name = "cuda"
    memory_model = MODEL  # the residency planner's figures (cuzk.backends.cuda.model)
    compiles_kernels = True  # NVRTC builds what the kernel cache does not hold

    def __init__(
        self,
        device_id: int = 0,
        limit_bytes: int | None = None,
        budget_fraction: float = 0.9,
        full_tables: bool | None = None,
        ctx: DeviceContext | None = None,
    ) -> None:
        import cupy

        self.cp = cupy
        self.ctx = ctx or DeviceContext(device_id, limit_bytes, budget_fraction)
        self.fr = FrKernels(self.ctx)
        self.ntt_engine = NttEngine(self.ctx, full_tables=full_tables)
        self.hpoly = HPoly(self.ntt_engine)
        self.spmv_engine = SpmvEngine(self.ctx, self.fr)
        self._msm = None
        self._streams: dict[str, Any] = {}
        self._streams_lock = threading.Lock()

    @property
    def device_budget(self) -> Any:
        """The device's budget its operations reserve from (the context's)."""
        return self.ctx.budget

    @staticmethod
    def prove_host_bytes(num_constraints: int, num_variables: int) -> int:
        """Host bytes one proof of this shape holds (:meth:`CudaMemoryModel.prove_host_bytes`)."""
        return MODEL.prove_host_bytes(num_constraints, num_variables)

    @staticmethod
    def prove_device_bytes(
        num_constraints: int, num_variables: int, fork_share: int | None = None
    ) -> int:
        """Device bytes one whole proof of this shape takes beyond its key
        (:meth:`cuzk.backends.cuda.model.CudaMemoryModel.partition_bytes`)."""
        return MODEL.partition_bytes(num_constraints, num_variables, fork_share)

    @staticmethod
    def prepared_key_bytes(point_bytes: int, r1cs: Any) -> int:
        """Device bytes a prepared key holds: its bases resident (``point_bytes``:
        96 bytes a G1 point, 192 a G2 point, as the MSM keeps them), the
        staging of their load from a file, A, B, C as the sparse engine
        stores them (:func:`cuzk.backends.cuda.csr_bytes.resident_bytes_estimate`)
        and the temporaries of converting the largest (``upload_bytes``)."""
        from cuzk.backends.cuda.csr_bytes import resident_bytes_estimate, upload_bytes
        from cuzk.backends.cuda.msm import load_staging_bytes

        ms = (r1cs.a, r1cs.b, r1cs.c)
        matrices = sum(resident_bytes_estimate(m) for m in ms)
        upload = max(upload_bytes(m.num_rows, m.nnz) for m in ms)
        index = 2 * 4 * r1cs.num_variables  # the a and b selections (prepare_index)
        return point_bytes + load_staging_bytes() + matrices + upload + index

    def _device(self):
        return self.cp.cuda.Device(self.ctx.device_id)

    def activate(self) -> Any:
        """This GPU made the calling thread's current device."""
        return self._device()

    def free_device_bytes(self) -> int | None:
        """Free memory as the driver reports it (what nvidia-smi shows, whatever
        the budget); None when the device cannot say (a lost device: its health
        check reports it)."""
        try:
            with self._device():
                free, _total = self.cp.cuda.runtime.memGetInfo()
        except Exception:
            return None
        return int(free)

    def witness_device(self) -> Any:
        """The witness kernels on this GPU (static plans run on the device)."""
        from cuzk.backends.cuda.witness import CudaWitness

        return CudaWitness(self.ctx)

    def point_maker(self) -> Any:
        """This GPU's fixed-base multiples (a development key's points)."""
        return self._msm_engine()

    # --- arrays ---------------------------------------------------------
    def asarray(self, a: Any):
        with self._device():
            out = self.cp.ascontiguousarray(self.cp.asarray(a, dtype=self.cp.uint64))
        check_fr_shape(out)
        return out

    def to_host(self, a: Any) -> np.ndarray:
        return np.ascontiguousarray(self.cp.asnumpy(a), dtype=np.uint64)

    def prepare_index(self, idx: np.ndarray) -> DeviceIndex:
        """Resident for its owner: 4 bytes an index (8 beyond 2^31 rows); ``close()`` frees it."""
        idx = np.asarray(idx)
        dtype = np.int32 if not len(idx) or int(idx.max()) < 2**31 else np.int64
        hold = self.ctx.budget.acquire(len(idx) * np.dtype(dtype).itemsize, "key index")
        try:
            with self._device():
                arr = self.cp.asarray(idx.astype(dtype, copy=False))
        except BaseException:
            hold.release()
            raise
        return DeviceIndex(arr, hold)

    def gather(self, a: Any, idx: Any) -> Any:
        """Rows of a device array at a prepared index (CuPy's take: one pass, no host copy)."""
        with self._device():
            rows = idx.array if isinstance(idx, DeviceIndex) else self.cp.asarray(idx)
            return self.cp.take(self.asarray(a), rows, axis=0)

    def compact(self, a: Any, idx: Any = None, start: int = 0) -> Compact:
        """The scalars ``a[idx]`` (or ``a[start:]``) classified on the device a
        step at a time (within a reservation of one step's arrays, the step
        fitted to half the room free: :func:`.compact.classify_step`), kept in
        pinned host memory: a pass over streamed bases uploads a chunk's bits
        and full values and expands them there."""
        cp = self.cp
        with self._device():
            values = self.asarray(a)
            rows = None
            if idx is not None:
                rows = idx.array if isinstance(idx, DeviceIndex) else cp.asarray(idx)
            n = len(rows) if rows is not None else max(0, len(values) - start)
            step = _compact.classify_step(n, self.ctx.budget.free_bytes)
            with self.ctx.budget.reserve(_compact.classify_step_bytes(step), "compact scalars"):
                return _compact.classify(
                    cp, values, rows, start, alloc=cp.cuda.alloc_pinned_memory, step=step
                )

    def load_kernels(self, progress: Callable[..., None] | None = None) -> None:
        """Load every kernel module the backend proves with
        (:func:`cuzk.backends.cuda.kernels.backend_modules`), compiling with NVRTC
        what neither the kernel cache nor ``CUZK_KERNEL_PREBUILT`` holds;
        ``progress(done, total, description, seconds)`` after each (the module
        and its defines, :func:`cuzk.backends.cuda.loader.describe`)."""
        from cuzk.backends.cuda.kernels import backend_modules
        from cuzk.backends.cuda.loader import describe

        modules = backend_modules()
        for i, (name, extra) in enumerate(modules, 1):
            t = time.perf_counter()
            self.ctx.module(name, extra)
            if progress is not None:
                progress(i, len(modules), describe(name, extra), time.perf_counter() - t)

    def synchronize(self) -> None:
        """Wait for the calling thread's queued work: its current stream (a
        device-wide wait would also wait for another worker's witness)."""
        with self._device():
            self.cp.cuda.get_current_stream().synchronize()

    # The roles of work_stream and their stream priorities: time-critical work
    # (a WinningPoSt's witness and proof) is scheduled first, then the prover's
    # stream; a witness runs in what they leave of the device (it has a
    # partition's proving time to finish in). CuPy's runtime module does not
    # wrap cudaDeviceGetStreamPriorityRange, so "urgent" asks for the end of
    # the range without querying it (cudaStreamCreateWithPriority clamps a
    # number past the greatest, an H200's -5, to the greatest) and "prove" is
    # one step below what that stream got (stream_priority); 0 (the default) is
    # the least priority on every CUDA device.
    STREAM_PRIORITY: ClassVar[dict[str, int]] = {
        "urgent": -(1 << 16),
        "prove": -(1 << 16) + 1,  # resolved against the urgent stream's
        "witness": 0,
    }

    def stream_priority(self, role: str) -> int:
        """The priority asked for ``role``'s stream: "prove" one step below the
        greatest (the urgent stream's, read back), or the greatest where the
        device has a single step or the priority cannot be read."""
        want = self.STREAM_PRIORITY[role]
        if role != "prove":
            return want
        urgent = self._role_stream("urgent")
        got = getattr(urgent, "priority", None)
        if got is None:
            try:
                got = self.cp.cuda.runtime.streamGetPriority(urgent.ptr)
            except AttributeError:
                return self.STREAM_PRIORITY["urgent"]
        return min(int(got) + 1, 0)

    def _role_stream(self, role: str) -> Any:
        """``role``'s stream on this device, made on first use (the caller has
        made the device current)."""
        with self._streams_lock:
            stream = self._streams.get(role)
        if stream is not None:
            return stream
        priority = self.stream_priority(role)
        with self._streams_lock:
            stream = self._streams.get(role)
            if stream is None:
                stream = self.cp.cuda.Stream(non_blocking=True, priority=priority)
                self._streams[role] = stream
            return stream

    @contextmanager
    def work_stream(self, role: str) -> Iterator[Any]:
        """The calling thread's work goes to this device's stream for ``role``
        (an optional capability: callers without it use the default stream).

        One stream a role per device, non-blocking: time-critical work's
        ("urgent") at the device's highest priority, the prover's just below
        it and the witness's at its lowest, so two
        workers' witness and proof overlap instead of queueing on the legacy
        default stream, and the proof is not slowed by the witness beside it.
        All workers of a role share its stream: CuPy's pool keeps freed
        blocks per stream, and one stream per worker would cache a proof's
        working set once for every worker. Work queued on the default stream
        before (a key's upload) is waited for on entry; on exit the default
        stream waits for the section's work.
        """
        if role not in self.STREAM_PRIORITY:
            roles = tuple(self.STREAM_PRIORITY)
            raise ValueError(f"work_stream: role {role!r} is not one of {roles}")
        cp = self.cp
        with self._device():
            stream = self._role_stream(role)
            before = cp.cuda.Event(disable_timing=True)
            before.record(cp.cuda.Stream.null)
            stream.wait_event(before)
            try:
                with stream:
                    yield stream
            finally:
                after = cp.cuda.Event(disable_timing=True)
                after.record(stream)
                cp.cuda.Stream.null.wait_event(after)

    @staticmethod
    def side_workspace_bytes(domain_size: int, num_variables: int) -> int:
        """What a proof's side branch (:meth:`fork`) sizes its MSMs to
        (:meth:`CudaMemoryModel.side_workspace_bytes`)."""
        return MODEL.side_workspace_bytes(domain_size, num_variables)

    def fork(self, domain_size: int, num_variables: int, share: int | None = None) -> Branch:
        """A second line of the calling thread's work, to run beside it.

        The branch's function (:meth:`Branch.start`) runs in a thread of its
        own on a side stream of the calling stream's role (the same priority),
        after the work queued on the calling stream so far, drawing from the
        calling thread's reservation envelope. Until :meth:`Branch.join` its
        MSMs size their workspace to ``share`` bytes (None:
        :meth:`side_workspace_bytes`; more
        window groups), and one that this would cut down to the XYZZ method
        waits for the join instead. The prover runs a proof's L, A and B
        MSMs there while its own stream computes H and H's MSM (an optional
        capability: without it they run in turn).

        Forked where the calling thread sizes its work within a final cap (a
        lean partition's MSM room, :meth:`DeviceBudget.sized_within`), the
        share comes out of that room (:meth:`DeviceBudget.branch_cap`): the
        branch sizes within it throughout (its cap final too: the room
        beyond it is held by the partition's live vectors, not free) and the
        calling thread within the rest until the join, so the two passes
        together stay within the room the plan gave the partition.
        """
        cp = self.cp
        with self._device():
            origin = cp.cuda.get_current_stream()
            with self._streams_lock:
                role = next((r for r, st in self._streams.items() if st is origin), None)
                key = f"{role}:side"
                side = self._streams.get(key)
                if side is None:
                    priority = getattr(origin, "priority", None)  # the same as its role's
                    if priority is None:
                        priority = self.STREAM_PRIORITY.get(role, 0)
                    side = cp.cuda.Stream(non_blocking=True, priority=priority)
                    self._streams[key] = side
            ready = cp.cuda.Event(disable_timing=True)
            ready.record(origin)
        budget = self.ctx.budget
        nbytes = self.side_workspace_bytes(domain_size, num_variables) if share is None else share
        return Branch(self, origin, side, ready, budget.envelope(), budget.branch_cap(nbytes))

    # --- constraint evaluation -----------------------------------------
    def prepare_matrix(self, m: SparseMatrix, resident: bool = True) -> DeviceCsr | StreamedCsr:
        """For its owner (not the per-matrix cache), resident or in pinned host
        memory streamed through the device by each product; ``close()`` frees it."""
        with self._device():
            return self.spmv_engine.from_arrays(
                m.indptr, m.indices, m.coeffs, m.num_cols, resident=resident
            )

    def spmv(self, m: SparseMatrix | DeviceCsr | StreamedCsr, w: Any, rows: int | None = None):
        with self._device():
            dev = m if isinstance(m, DeviceCsr | StreamedCsr) else self.spmv_engine.upload(m)
            if rows is None or rows == dev.num_rows:
                return self.spmv_engine.matvec(dev, w)
            if rows < dev.num_rows:
                raise ValueError(f"spmv: {rows} rows asked of a matrix of {dev.num_rows}")
            with self.ctx.budget.reserve(32 * rows, "spmv output (padded)"):
                out = self.cp.zeros((rows, 4), dtype=self.cp.uint64)
                return self.spmv_engine.matvec(dev, w, out=out)

    # --- polynomials ----------------------------------------------------
    def ntt(self, a: Any):
        with self._device():
            return self.ntt_engine.ntt(a)

    def intt(self, a: Any):
        with self._device():
            return self.ntt_engine.intt(a)

    def coset_ntt(self, a: Any):
        with self._device():
            return self.ntt_engine.coset_ntt(a)

    def coset_intt(self, a: Any):
        with self._device():
            return self.ntt_engine.coset_intt(a)

    def h_poly(self, a: Any, b: Any, c: Any):
        with self._device():
            return self.hpoly(a, b, c)

    def h_odd_coset(self, a: Any, b: Any, c: Any = None):
        with self._device():
            return h_odd_coset(self.ntt_engine, self.fr, a, b, c)

    # --- multi-scalar multiplication -------------------------------------
    def _msm_engine(self):
        # Made on first use: its kernels compile (or load) only when an MSM runs.
        if self._msm is None:
            from cuzk.backends.cuda.msm import MsmEngine

            self._msm = MsmEngine(self.ctx)
        return self._msm

    def prepare_g1(self, bases: np.ndarray, resident: bool | None = None) -> Any:
        with self._device():
            return self._msm_engine().prepare_g1(bases, resident=resident)

    def prepare_g2(self, bases: np.ndarray, resident: bool | None = None) -> Any:
        with self._device():
            return self._msm_engine().prepare_g2(bases, resident=resident)

    def load_g1(
        self, count: int, read: Any, progress: Any = None, resident: bool | None = None
    ) -> Any:
        with self._device():
            return self._msm_engine().load_g1(count, read, progress, resident=resident)

    def load_g2(
        self, count: int, read: Any, progress: Any = None, resident: bool | None = None
    ) -> Any:
        with self._device():
            return self._msm_engine().load_g2(count, read, progress, resident=resident)

    def msm_g1(self, bases: Any, scalars: Any, phases: dict | None = None) -> Affine:
        with self._device():
            return self._msm_engine().msm_g1(bases, scalars, phases)

    def msm_g2(self, bases: Any, scalars: Any, phases: dict | None = None) -> Affine:
        with self._device():
            return self._msm_engine().msm_g2(bases, scalars, phases)

    def msm_g1_many(self, bases: Any, scalar_sets: list, phases: dict | None = None) -> list:
        from cuzk.backends.cuda.msm import G1_SPEC

        with self._device():
            sets = [self._on_device(s) for s in scalar_sets]
            return self._msm_engine().msm_many(bases, sets, phases, G1_SPEC)

    def msm_g2_many(self, bases: Any, scalar_sets: list, phases: dict | None = None) -> list:
        from cuzk.backends.cuda.msm import G2_SPEC

        with self._device():
            sets = [self._on_device(s) for s in scalar_sets]
            return self._msm_engine().msm_many(bases, sets, phases, G2_SPEC)

    def _on_device(self, scalars: Any) -> Any:
        """A :class:`Gathered` set with its values and index on the device (the
        MSM engine takes its rows there: whole beside resident bases, a chunk
        at a time beside streamed ones); any other set as it is."""
        if not isinstance(scalars, Gathered):
            return scalars
        idx = scalars.index
        rows = idx.array if isinstance(idx, DeviceIndex) else self.cp.asarray(idx)
        return Gathered(self.asarray(scalars.values), rows)

    # --- reporting --------------------------------------------------------
    def peak_bytes_by_operation(self) -> dict[str, int]:
        """The largest reservation each operation made on this device."""
        return dict(self.ctx.budget.peak_by_operation)
