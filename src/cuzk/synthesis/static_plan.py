"""The witness plan compiled once per circuit, run per partition on a device.

:class:`StaticPlan` records every pass of a :class:`~cuzk.synthesis.plan.WitnessPlan`
once, as a :class:`~cuzk.synthesis.program.Program`, and fixes where each of
its instances (lanes) lives: the pass's own aux and input bases, the
columns of ``W`` its ports are read from, and which entries of the
partition's hint table its hint slots are. All of it depends only on the
circuit, so it is built once (from any partition's hints, for their shape)
and kept — on the device, with its arrays uploaded once.

A partition's witness is then: its hints flattened into a table (a few
thousand field elements), and one program run per pass, callers before
callees, on a :class:`WitnessDevice`. The assignment is made where the
device keeps it and stays there.

A pass of key K runs over the lanes of every deferred call to K, from every
caller pass and call site: lane arrays are composed site by site from the
caller's (``aux_base + aux_offset``, ports resolved through the caller's own
columns, hint slots through the caller's hint index).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R
from cuzk.gadgets.subcircuit import Subcircuit
from cuzk.synthesis.compile import K_AUX, K_INPUT, K_ONE, K_PORT, CompiledCircuit, Compiler
from cuzk.synthesis.program import (
    F,
    PoseidonTables,
    Program,
    TraceLookup,
    hint_leaves,
    record,
    symbolic,
)

log = logging.getLogger(__name__)


class WitnessDevice(Protocol):
    """Where programs run: numpy (:mod:`cuzk.synthesis.program_numpy`) or a GPU
    (``cuzk.backends.cuda.witness``). Arrays it returns stay on it."""

    def zeros(self, n: int) -> Any:
        """An ``(n, 4)`` uint64 assignment with ``W[0] = ONE`` and zeros elsewhere."""

    def upload(self, a: np.ndarray) -> Any:
        """A host array of the plan, on the device (kept as long as the plan)."""

    def hints(self, table: np.ndarray, W: Any) -> Any:
        """A partition's hint table, on the device as long as its assignment ``W``."""

    def poseidon(self, head: np.ndarray, values: list[int]) -> Any:
        """The Poseidon tables (:meth:`PoseidonTables.arrays`), on the device."""

    def program(self, p: Program) -> Any:
        """A program's arrays, on the device."""

    def run(self, W: Any, hints: Any, poseidon: Any, program: Any, lanes: PassLanes) -> None:
        """Run a program over its lanes, writing ``W``."""


@dataclass
class PassLanes:
    """Where each lane of a pass lives (host arrays; ``device`` holds copies)."""

    lanes: int
    n_inputs: int  # of the circuit (ONE included): aux column j is n_inputs + j
    aux_base: np.ndarray  # (lanes,) int64
    input_base: np.ndarray  # (lanes,) int64
    port_cols: np.ndarray  # (lanes, ports) int64
    hint_index: np.ndarray  # (lanes, slots) int64
    device: dict = field(default_factory=dict)

    @staticmethod
    def concat(parts: list[PassLanes]) -> PassLanes:
        return PassLanes(
            sum(p.lanes for p in parts),
            parts[0].n_inputs,
            np.concatenate([p.aux_base for p in parts]),
            np.concatenate([p.input_base for p in parts]),
            np.concatenate([p.port_cols for p in parts]),
            np.concatenate([p.hint_index for p in parts]),
        )

    def on(self, device: WitnessDevice) -> dict:
        """The lane arrays uploaded to ``device`` (once)."""
        got = self.device.get(id(device))
        if got is None or got[0] is not device:  # (an id can be reused once freed)
            arrays = {
                name: device.upload(np.ascontiguousarray(getattr(self, name)))
                for name in ("aux_base", "input_base", "port_cols", "hint_index")
            }
            got = self.device[id(device)] = (device, arrays)
        return got[1]


@dataclass
class Pass:
    program: Program
    lanes: PassLanes
    wave: int = 0  # 1 + the latest wave of its callers: passes of a wave are independent


def _callee_lanes(caller: PassLanes, site) -> PassLanes:
    n = caller.lanes
    cols = np.empty((n, len(site.port_codes)), dtype=np.int64)
    for p, (kind, idx) in enumerate(site.port_codes):
        if kind == K_ONE:
            cols[:, p] = 0
        elif kind == K_PORT:
            cols[:, p] = caller.port_cols[:, idx]
        elif kind == K_AUX:
            cols[:, p] = caller.n_inputs + caller.aux_base + idx
        else:
            assert kind == K_INPUT
            cols[:, p] = caller.input_base + idx
    hint_map = np.asarray(site.hint_map, dtype=np.int64)
    return PassLanes(
        n,
        caller.n_inputs,
        caller.aux_base + site.aux_offset,
        caller.input_base + site.input_offset,
        cols,
        caller.hint_index[:, hint_map] if len(hint_map) else np.zeros((n, 0), dtype=np.int64),
    )


class StaticPlan:
    """Every pass of a circuit's witness, recorded once (see the module docstring)."""

    def __init__(
        self,
        circuit_id: str,
        n_inputs: int,
        n_aux: int,
        passes: list[Pass],
        hint_kinds: list[str],
        tables: PoseidonTables,
    ) -> None:
        self.circuit_id = circuit_id
        self.n_inputs = n_inputs
        self.n_aux = n_aux
        self.passes = passes
        self.hint_kinds = hint_kinds
        self.tables = tables
        self.copies = 1  # copies of the top subcircuit (hints: one per copy)
        self._device: dict[int, tuple[Any, Any, list[Any]]] = {}
        self.stats: list[tuple[str, int, int, float]] = []  # key, lanes, ops, seconds

    @staticmethod
    def build(
        compiled: CompiledCircuit,
        top: Subcircuit,
        hints: Any,
        lookup: TraceLookup,
        compiler: Compiler | None = None,
    ) -> StaticPlan:
        """Record the passes of ``compiled`` (whose top subcircuit is ``top``);
        ``hints`` are any partition's hints (only their shape is used): of
        the one top instance, or a list with one per copy when the circuit is
        ``copies`` copies of ``top`` (PoSt's sector slots)."""
        t0 = time.perf_counter()
        compiler = compiler or Compiler()
        known = {t.key: t for t in compiled.templates()}

        def template(sub: Subcircuit):
            got = known.get(sub.key)
            return got if got is not None else compiler.template(sub)

        tables = PoseidonTables()
        kinds: list[str] = []
        copies = compiled.copies
        top_hints = symbolic(hints if copies == 1 else hints[0], kinds)
        n_in = compiled.num_inputs
        k = np.arange(copies, dtype=np.int64)
        t = compiled.top
        top_lanes = PassLanes(
            copies,
            n_in,
            k * t.num_aux,
            1 + k * t.num_inputs,
            np.zeros((copies, 0), dtype=np.int64),
            k[:, None] * len(kinds) + np.arange(len(kinds), dtype=np.int64)[None, :],
        )
        passes: list[Pass] = []
        # key -> (subcircuit, symbolic hints of its first site, lane parts)
        queue: dict[str, tuple[Subcircuit, Any, list[PassLanes]]] = {}
        walks: dict[str, set[str]] = {}

        def calls(key: str, sub: Subcircuit) -> set[str]:
            if key not in walks:
                walks[key] = {t.key for t in template(sub).walk()} - {key}
            return walks[key]

        callers: dict[str, int] = {}  # key -> the latest wave that calls it

        def run(sub: Subcircuit, sym_hints: Any, lanes: PassLanes, n_slots: int, wave: int):
            program = record(sub, sym_hints, lookup, template, tables, n_slots)
            passes.append(Pass(program, lanes, wave))
            for site in program.sites:
                entry = queue.setdefault(site.sub.key, (site.sub, site.hints, []))
                entry[2].append(_callee_lanes(lanes, site))
                callers[site.sub.key] = max(callers.get(site.sub.key, 0), wave)

        run(top, top_hints, top_lanes, len(kinds), 0)
        while queue:
            key = next(
                k for k in queue if not any(k in calls(o, s) for o, (s, _, _) in queue.items())
            )
            sub, sym_hints, parts = queue.pop(key)
            lanes = PassLanes.concat(parts)
            n_slots = lanes.hint_index.shape[1]
            if any(p.hint_index.shape[1] != n_slots for p in parts):
                raise AssertionError(f"{key}: call sites pass hints of different shapes")
            run(sub, sym_hints, lanes, n_slots, callers.pop(key) + 1)
        plan = StaticPlan(compiled.circuit_id, n_in, compiled.num_aux, passes, kinds, tables)
        plan.copies = copies
        log.info(
            "static witness plan of %s: %d passes, %d instructions, recorded in %.1f s",
            compiled.circuit_id,
            len(passes),
            sum(p.program.num_ops for p in passes),
            time.perf_counter() - t0,
        )
        return plan

    # --- per partition ----------------------------------------------------------
    def hint_table(self, hints: Any) -> np.ndarray:
        """The partition's hint values as ``(leaves, 4)`` uint64 (Fr in standard
        form; bits and words in limb 0), in slot order (copy by copy)."""
        if self.copies > 1:
            if len(hints) != self.copies:
                raise ValueError(
                    f"{self.circuit_id}: hints for {len(hints)} copies, the circuit has "
                    f"{self.copies}"
                )
            return np.concatenate([self._hint_table(h) for h in hints])
        return self._hint_table(hints)

    def _hint_table(self, hints: Any) -> np.ndarray:
        leaves = hint_leaves(hints)
        if len(leaves) != len(self.hint_kinds):
            raise ValueError(
                f"{self.circuit_id}: hints with {len(leaves)} values, the plan has "
                f"{len(self.hint_kinds)}"
            )
        out = np.zeros((len(leaves), 4), dtype=np.uint64)
        fr_rows = [j for j, k in enumerate(self.hint_kinds) if k == F]
        for j, (leaf, kind) in enumerate(zip(leaves, self.hint_kinds, strict=True)):
            if leaf.shape != (1,):
                raise ValueError(f"{self.circuit_id}: hint value {j} is not one lane")
            if (kind == F) != (leaf.dtype == object):
                raise ValueError(f"{self.circuit_id}: hint value {j} changed type")
            if kind != F:
                out[j, 0] = int(leaf[0])
        if fr_rows:
            out[fr_rows] = fr_to_array([int(leaves[j][0]) % R for j in fr_rows])
        return out

    # --- device memory ------------------------------------------------------------
    def device_bytes(self) -> int:
        """Bytes the plan keeps on a device once prepared (:meth:`prepare`): programs (rows,
        arguments, constants), lane arrays and Poseidon tables, as uploaded."""
        head, values = self.tables.arrays()
        n = head.nbytes + 32 * len(values)
        for p in self.passes:
            prog = p.program
            n += 4 * np.asarray(prog.ops).size + 4 * np.asarray(prog.args).size
            n += 8 * np.asarray(prog.uconst).size + 32 * len(prog.fconst)
            lanes = p.lanes
            n += 8 * (2 * lanes.lanes + lanes.port_cols.size + lanes.hint_index.size)
        return n

    def run_bytes(self, register_bytes: Callable[[Program, int], int]) -> int:
        """Device bytes one :meth:`run` takes beyond the plan and the assignment: the
        hint table, and the largest wave's registers (``register_bytes(program,
        lanes)``: the device's own layout)."""
        waves = self.waves()
        regs = max(
            (
                sum(register_bytes(self.passes[i].program, self.passes[i].lanes.lanes) for i in w)
                for w in waves
            ),
            default=0,
        )
        return 32 * len(self.hint_kinds) * self.copies + regs

    def prepare(self, device: WitnessDevice) -> None:
        """Upload the plan's arrays to ``device`` now (else the first :meth:`run` does)."""
        self._on(device)
        for p in self.passes:
            p.lanes.on(device)

    def _on(self, device: WitnessDevice) -> tuple[Any, Any, list[Any]]:
        got = self._device.get(id(device))
        if got is None or got[0] is not device:  # (an id can be reused once freed)
            head, values = self.tables.arrays()
            got = self._device[id(device)] = (
                device,
                device.poseidon(head, values),
                [device.program(p.program) for p in self.passes],
            )
        return got

    def run(self, device: WitnessDevice, hints: Any, timed: bool = False) -> Any:
        """The full assignment ``[ONE, inputs…, aux…]`` of one partition, on ``device``."""
        return self.run_table(device, self.hint_table(hints), timed)

    def run_table(self, device: WitnessDevice, hint_table: np.ndarray, timed: bool = False) -> Any:
        """:meth:`run` from the partition's :meth:`hint_table` (made where the
        hints are: a synthesis process sends the table, not the hints)."""
        if hint_table.shape != (len(self.hint_kinds) * self.copies, 4):
            raise ValueError(
                f"{self.circuit_id}: a hint table of shape {hint_table.shape}, the plan "
                f"takes ({len(self.hint_kinds) * self.copies}, 4)"
            )
        _, poseidon, programs = self._on(device)
        W = device.zeros(self.n_inputs + self.n_aux)
        try:
            self._waves(device, W, device.hints(hint_table, W), poseidon, programs, timed)
        except BaseException:
            free = getattr(device, "free", None)
            if free is not None:  # the assignment's memory goes back with the error
                free(W)
            raise
        return W

    def _waves(
        self, device: WitnessDevice, W: Any, table: Any, poseidon: Any, programs: list, timed: bool
    ) -> None:
        stats: list[tuple[str, int, int, float]] = []
        run_many = getattr(device, "run_many", None)
        for wave in self.waves():
            t0 = time.perf_counter()
            if run_many is not None and len(wave) > 1 and not timed:
                items = [(programs[i], self.passes[i].lanes) for i in wave]
                run_many(W, table, poseidon, items)  # concurrently (streams)
            else:
                for i in wave:
                    p = self.passes[i]
                    t1 = time.perf_counter()
                    device.run(W, table, poseidon, programs[i], p.lanes)
                    if timed:
                        self._sync(device)
                        elapsed = time.perf_counter() - t1
                        stats.append((p.program.key, p.lanes.lanes, p.program.num_ops, elapsed))
            if not timed:
                stats.append((f"wave of {len(wave)}", 0, 0, time.perf_counter() - t0))
        self.stats = stats  # the last run's (runs on several threads each keep their own list)

    @staticmethod
    def _sync(device: WitnessDevice) -> None:
        sync = getattr(device, "synchronize", None)
        if sync is not None:
            sync()

    def waves(self) -> list[list[int]]:
        """Pass indices grouped by wave: a wave's passes only read what earlier
        waves wrote, so they may run concurrently."""
        out: dict[int, list[int]] = {}
        for i, p in enumerate(self.passes):
            out.setdefault(p.wave, []).append(i)
        return [out[w] for w in sorted(out)]

    def forget(self, device: WitnessDevice) -> None:
        """Drop this plan's arrays on ``device`` (programs, lanes)."""
        self._device.pop(id(device), None)
        for p in self.passes:
            p.lanes.device.pop(id(device), None)

    def summary(self) -> list[dict]:
        """Per pass: key, lanes, instructions, registers (for the docs and the CLI)."""
        return [
            {
                "key": p.program.key,
                "wave": p.wave,
                "lanes": p.lanes.lanes,
                "ops": p.program.num_ops,
                "u_regs": p.program.n_u,
                "f_regs": p.program.n_f,
                "sites": len(p.program.sites),
            }
            for p in self.passes
        ]


# --------------------------------------------------------------------------
# On disk (next to the compiled circuits: recording a 32GiB plan takes ~25 s)
# --------------------------------------------------------------------------

PLAN_FORMAT = 1
_PROGRAM_ARRAYS = ("ops", "args", "uconst", "fconst")
_LANE_ARRAYS = ("aux_base", "input_base", "port_cols", "hint_index")


def save_plan(plan: StaticPlan, path: Path) -> None:
    """Write ``plan`` as one ``.npz`` (arrays and a JSON header, no pickles)."""
    arrays: dict[str, np.ndarray] = {}
    meta_passes = []
    for i, p in enumerate(plan.passes):
        for name in _PROGRAM_ARRAYS:
            arrays[f"p{i}_{name}"] = getattr(p.program, name)
        for name in _LANE_ARRAYS:
            arrays[f"l{i}_{name}"] = getattr(p.lanes, name)
        meta_passes.append(
            {
                "key": p.program.key,
                "ports": list(p.program.ports),
                "slots": p.program.n_slots,
                "n_u": p.program.n_u,
                "n_f": p.program.n_f,
                "wave": p.wave,
                "lanes": p.lanes.lanes,
            }
        )
    head, values = plan.tables.arrays()
    arrays["poseidon_head"] = head
    arrays["poseidon_values"] = fr_to_array(values)
    meta = {
        "format": PLAN_FORMAT,
        "circuit_id": plan.circuit_id,
        "n_inputs": plan.n_inputs,
        "n_aux": plan.n_aux,
        "copies": plan.copies,
        "hint_kinds": "".join(plan.hint_kinds),
        "tables": len(plan.tables.tables),
        "passes": meta_passes,
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    from cuzk.synthesis.cache import atomic_save

    atomic_save(path, arrays)


def load_plan(path: Path) -> StaticPlan:
    with np.load(path) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        if meta["format"] != PLAN_FORMAT:
            raise ValueError(f"{path}: plan format {meta['format']}, expected {PLAN_FORMAT}")
        passes = []
        for i, mp in enumerate(meta["passes"]):
            prog = Program(
                key=mp["key"],
                ports=tuple(mp["ports"]),
                n_slots=mp["slots"],
                n_u=mp["n_u"],
                n_f=mp["n_f"],
                **{name: z[f"p{i}_{name}"] for name in _PROGRAM_ARRAYS},
            )
            lanes = PassLanes(
                mp["lanes"], meta["n_inputs"], **{n: z[f"l{i}_{n}"] for n in _LANE_ARRAYS}
            )
            passes.append(Pass(prog, lanes, mp["wave"]))
        tables = PoseidonTables()
        head = z["poseidon_head"]
        values = fr_from_array(z["poseidon_values"])
        for k in range(meta["tables"]):
            off, t, half, partial = (int(x) for x in head[k])
            end = int(head[k + 1][0]) if k + 1 < meta["tables"] else len(values)
            tables.tables.append(((t, half, partial), values[off:end]))
    plan = StaticPlan(
        meta["circuit_id"],
        meta["n_inputs"],
        meta["n_aux"],
        passes,
        list(meta["hint_kinds"]),
        tables,
    )
    plan.copies = meta["copies"]
    return plan


def load_or_build(
    circuit_id: str, build: Callable[[], StaticPlan], directory: Path | None = None
) -> StaticPlan:
    """The circuit's static plan from the circuit cache, or ``build()`` and store it
    (same directory and code version as :func:`cuzk.synthesis.cache.load_or_compile`)."""
    from cuzk.synthesis.cache import cache_dir, cached, code_version

    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", circuit_id)
    path = (directory or cache_dir()) / f"{stem}-{code_version()}-witness-plan.npz"
    return cached(path, load_plan, build, save_plan, f"witness plan of {circuit_id}")
