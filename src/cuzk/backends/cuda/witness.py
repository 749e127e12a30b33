"""Witness programs on the GPU: the loader of ``kernels/witness.cu``.

:class:`CudaWitness` is a ``WitnessDevice`` (``cuzk.synthesis.static_plan``):
it keeps a circuit's recorded programs and lane arrays on the device and runs
one ``witness_program`` launch per pass, one thread per lane, so a
partition's assignment is made in device memory from its hint table (a few
thousand field elements) and never crosses to the host.

This module only sizes grids, converts constants to Montgomery form and
passes pointers; what the instructions mean is ``cuzk.synthesis.program``
(read through duck typing: a program has ``ops``, ``args``, ``uconst``,
``fconst``, ``n_u``, ``n_f``, ``key``; lanes have ``lanes``, ``n_inputs`` and
``on(device)``). The kernel's CPU twin is ``cuzk.synthesis.program_numpy``.

VRAM: every allocation is counted in the context's budget. The registers of
a pass are reserved for its launch; the assignment, the hint table and the
programs outlive a call: an assignment holds its bytes until
:meth:`CudaWitness.free`, the plan's arrays until :meth:`CudaWitness.release`.
Under an engine reservation (``DeviceBudget.drawing_from``) all of them
draw from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.backends.cuda.fr import mont_limbs
from cuzk.backends.cuda.memory import DeviceContext, Hold

THREADS = 64  # lanes per block: passes have hundreds to a few thousand lanes


@dataclass
class DeviceProgram:
    key: str
    ops: Any
    n_ops: int
    args: Any
    uconst: Any
    fconst: Any  # Montgomery form
    n_u: int
    n_f: int


KERNEL_MODULE = "witness.cu"  # cuzk.backends.cuda.kernels lists what the backend loads


class CudaWitness:
    """Runs witness programs on one GPU (see the module docstring)."""

    def __init__(self, ctx: DeviceContext | None = None) -> None:
        import cupy

        self.cp = cupy
        self.ctx = ctx or DeviceContext()
        module = self.ctx.module(KERNEL_MODULE)
        self._program = module.get_function("witness_program")
        self._sha256 = module.get_function("sha256_compress_kernel")
        self._poseidon = module.get_function("poseidon_kernel")
        self.holds: list[Hold] = []
        self._assignments: dict[int, tuple[Any, list[Hold]]] = {}
        self._streams: list[Any] = []

    # --- long-lived arrays ---------------------------------------------------
    def _keep(self, a: np.ndarray, what: str) -> Any:
        self.holds.append(self.ctx.budget.acquire(a.nbytes, what))
        return self.cp.asarray(np.ascontiguousarray(a))

    def release(self) -> None:
        """Give back the budget of every array this object made (drop the arrays first)."""
        for h in self.holds:
            h.release()
        self.holds = []

    def zeros(self, n: int) -> Any:
        """A new assignment (ONE, then zeros); its bytes are held until :meth:`free`."""
        hold = self.ctx.budget.acquire(32 * n, "witness assignment")
        W = self.cp.zeros((n, 4), dtype=self.cp.uint64)
        W[0, 0] = 1
        self._assignments[id(W)] = (W, [hold])
        return W

    def hints(self, table: np.ndarray, W: Any) -> Any:
        """A partition's hint table, held (and freed) with its assignment ``W``."""
        self._assignments[id(W)][1].append(self.ctx.budget.acquire(table.nbytes, "witness hints"))
        return self.cp.asarray(np.ascontiguousarray(table))

    def free(self, W: Any) -> None:
        """Give back an assignment this device made, and its hints (drop other
        references to them too)."""
        _, holds = self._assignments.pop(id(W))
        for h in holds:
            h.release()

    def upload(self, a: np.ndarray) -> Any:
        return self._keep(a, "witness plan arrays")

    def poseidon(self, head: np.ndarray, values: list[int]) -> tuple[Any, Any]:
        table = mont_limbs(values)
        return self._keep(table, "Poseidon tables"), self._keep(head, "Poseidon tables")

    def program(self, p: Any) -> DeviceProgram:
        fconst = mont_limbs(fr_from_array(p.fconst))
        return DeviceProgram(
            p.key,
            self._keep(np.asarray(p.ops, dtype=np.uint32), "witness programs"),
            len(p.ops),
            self._keep(np.asarray(p.args, dtype=np.uint32), "witness programs"),
            self._keep(np.asarray(p.uconst, dtype=np.uint64), "witness programs"),
            self._keep(fconst, "witness programs"),
            p.n_u,
            p.n_f,
        )

    # --- runs --------------------------------------------------------------
    @staticmethod
    def register_bytes(p: Any, lanes: int) -> int:
        """Device bytes of a pass's registers (held for its launch): ``p`` is a
        program (``n_u``, ``n_f``), ``lanes`` its lane count."""
        n = int(lanes)
        return 8 * max(1, p.n_u) * n + 32 * max(1, p.n_f) * n

    def run_bytes(self, plan: Any) -> int:
        """Device bytes one run of a static plan takes beyond its assignment."""
        return int(plan.run_bytes(self.register_bytes))

    def run(self, W: Any, hints: Any, poseidon: tuple[Any, Any], p: DeviceProgram, lanes) -> None:
        """One pass: ``p`` over every lane of ``lanes``, writing ``W``."""
        with self.ctx.budget.reserve(self.register_bytes(p, lanes.lanes), f"witness pass {p.key}"):
            self._launch(W, hints, poseidon, p, lanes)

    def run_many(self, W: Any, hints: Any, poseidon: tuple[Any, Any], items: list) -> None:
        """Independent passes ((program, lanes) pairs) at once, one stream each
        (up to 8): a wave of small passes fills the device together."""
        cp = self.cp
        total = sum(self.register_bytes(p, lanes.lanes) for p, lanes in items)
        with self.ctx.budget.reserve(total, f"witness wave of {len(items)} passes"):
            while len(self._streams) < min(8, len(items)):
                self._streams.append(cp.cuda.Stream(non_blocking=True))
            done = cp.cuda.Event()
            done.record()  # the wave starts after everything before it
            for i, (p, lanes) in enumerate(items):
                stream = self._streams[i % len(self._streams)]
                stream.wait_event(done)
                with stream:
                    self._launch(W, hints, poseidon, p, lanes)
            for stream in self._streams[: len(items)]:
                stream.synchronize()

    def _launch(self, W: Any, hints: Any, poseidon: tuple[Any, Any], p: DeviceProgram, lanes):
        cp = self.cp
        n = int(lanes.lanes)
        if n == 0:
            return
        arrays = lanes.on(self)
        n_ports = int(lanes.port_cols.shape[1])
        n_slots = int(lanes.hint_index.shape[1])
        ureg = cp.empty(max(1, p.n_u) * n, dtype=cp.uint64)
        freg = cp.empty((max(1, p.n_f) * n, 4), dtype=cp.uint64)
        ptable, phead = poseidon
        self._program(
            ((n + THREADS - 1) // THREADS,),
            (THREADS,),
            (
                p.ops,
                np.uint32(p.n_ops),
                p.args,
                p.uconst,
                p.fconst,
                W,
                np.uint64(lanes.n_inputs),
                arrays["aux_base"],
                arrays["input_base"],
                arrays["port_cols"],
                np.uint32(n_ports),
                hints,
                arrays["hint_index"],
                np.uint32(n_slots),
                ureg,
                freg,
                np.uint64(n),
                ptable,
                phead,
            ),
        )
        del ureg, freg  # the pool reuses them in stream order

    def synchronize(self) -> None:
        self.cp.cuda.Device(self.ctx.device_id).synchronize()

    # --- batch hashes (the macros' own kernels) ------------------------------
    def sha256_compress(self, state: np.ndarray, block: np.ndarray) -> np.ndarray:
        """n compressions: (n, 8) state and (n, 16) block uint32 words → (n, 8)."""
        cp = self.cp
        n = len(state)
        st = cp.array(np.ascontiguousarray(state, dtype=np.uint32))  # a copy: updated in place
        blk = cp.asarray(np.ascontiguousarray(block, dtype=np.uint32))
        grid = (max(1, min((n + THREADS - 1) // THREADS, 4096)),)
        self._sha256(grid, (THREADS,), (st, blk, np.uint64(n)))
        return np.asarray(cp.asnumpy(st))

    def poseidon_hash(
        self, preimages: np.ndarray, head: np.ndarray, values: list[int]
    ) -> np.ndarray:
        """Poseidon of n preimages ((n, arity, 4) standard-form Fr) with one
        table (``head``: offset 0, t, half full rounds, partial rounds)."""
        cp = self.cp
        n = len(preimages)
        inp = cp.asarray(np.ascontiguousarray(preimages, dtype=np.uint64).reshape(-1, 4))
        out = cp.zeros((n, 4), dtype=cp.uint64)
        table = cp.asarray(mont_limbs(values))
        hd = cp.asarray(np.ascontiguousarray(head, dtype=np.uint32))
        grid = (max(1, min((n + THREADS - 1) // THREADS, 4096)),)
        self._poseidon(grid, (THREADS,), (out, inp, np.uint64(n), table, hd))
        return np.asarray(cp.asnumpy(out))
