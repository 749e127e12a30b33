"""A witness plan: every subcircuit shape's witness computed in one vectorised pass.

:class:`cuzk.synthesis.witness.LaneCS` computes the witness of n instances of
one synthesis at once. A PoRep partition nests thousands of calls (labels
made of SHA-256 blocks, Merkle paths made of levels, Poseidon hashes), and
many of them are chained (a block's state feeds the next block, a level's
parent the next level). Running them inline would cost one Python step per
variable per call; the plan instead runs each subcircuit **key** once, over
every instance of it in the circuit:

- a pass runs a subcircuit's synthesis on a :class:`PlanCS` (a ``LaneCS``);
- a call to a subcircuit that has a registered *evaluator* is **deferred**:
  its aux range is reserved, its outputs' values are computed directly by
  the evaluator (plain SHA-256 compression, Poseidon, ... on lane arrays),
  and the call (global aux bases, port values, hints) is queued;
- when a key's callers have all run, its queued calls become one pass with
  their lanes concatenated, and so on down the template tree.

Chains therefore cost one pass per *shape*, not per link: the 3,564 chained
SHA-256 blocks of a 32GiB partition's labels are one pass.

Every pass writes the values of its own (non-deferred) variables straight
into the global assignment ``W`` (``[ONE, inputs…, aux…]`` as ``(n, 4)``
uint64 limbs) at each instance's position, which the compiled template tree
fixes; so the result is bit-for-bit the inline synthesis' assignment.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import BIT, Subcircuit
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.field import OBJECT_FR
from cuzk.r1cs import Variable
from cuzk.r1cs.builder import AUX, INPUT
from cuzk.synthesis.compile import Compiler, Template, call_output
from cuzk.synthesis.witness import LaneCS

log = logging.getLogger(__name__)

# evaluator(values, port values, hints) -> output values (one per template output)
Evaluator = Callable[[LaneValues, list, Any], list]
# lookup(caller key, callee key) -> the evaluator that defers the call, or None (inline)
Lookup = Callable[[str, str], Evaluator | None]


@dataclass
class Deferred:
    """Queued calls of one subcircuit from one pass (``lanes`` instances)."""

    lanes: int
    aux_base: np.ndarray  # (lanes,) global aux index of the callee's local aux 0
    input_base: np.ndarray  # (lanes,) global input index of the callee's first input
    ports: list
    hints: Any
    expected: list  # the evaluator's output values, checked against the pass


def lanes_of(value: Any, lanes: int, kind: str) -> np.ndarray:
    """A port value as an array over ``lanes`` (constants broadcast)."""
    if isinstance(value, np.ndarray):
        return value
    if kind == BIT:
        return np.full(lanes, bool(value))
    out = np.empty(lanes, dtype=object)
    out[:] = int(value)
    return out


def concat_hints(parts: Sequence[Any]) -> Any:
    """Concatenate hint structures lane-wise (arrays along axis 0)."""
    first = parts[0]
    if first is None:
        return None
    if isinstance(first, np.ndarray):
        return np.concatenate(parts)
    if is_dataclass(first):
        return type(first)(
            **{f.name: concat_hints([getattr(p, f.name) for p in parts]) for f in fields(first)}
        )
    if isinstance(first, list | tuple):
        return type(first)(concat_hints([p[i] for p in parts]) for i in range(len(first)))
    raise TypeError(f"hints must be arrays (lanes first), got {type(first).__name__}")


def to_limbs(value: Any, lanes: int) -> np.ndarray:
    """A lane vector of Fr values (or one constant) as (lanes, 4) uint64."""
    out = np.zeros((lanes, 4), dtype=np.uint64)
    if isinstance(value, np.ndarray) and value.dtype != object:
        out[:, 0] = value.astype(np.uint64)
        return out
    if not isinstance(value, np.ndarray):
        out[:] = fr_to_array([int(value) % R])[0]
        return out
    try:
        out[:, 0] = value.astype(np.uint64)  # bits and small values: C speed
    except OverflowError:  # large, negative or unreduced (backends reduce lazily)
        out[:] = fr_to_array((value % R).tolist())
    return out


class PlanCS(LaneCS):
    """A lane constraint system that defers calls the plan can evaluate.

    Variables are numbered as in inline synthesis; a deferred call only
    advances the counters past its block (no per-variable placeholders), and
    the pass keeps ``(index, lane values)`` of the variables it computes.
    """

    def __init__(
        self,
        plan: WitnessPlan,
        key: str,
        values: LaneValues,
        aux_base: np.ndarray,
        input_base: np.ndarray,
    ) -> None:
        super().__init__(values)
        self.plan = plan
        self.key = key
        self.aux_base = aux_base
        self.input_base = input_base
        self.num_aux = 0
        self.num_inputs = 0
        self.aux_values: list[tuple[int, Any]] = []
        self.input_values: list[tuple[int, Any]] = []

    def alloc(self, name: str, value: Any = None) -> Variable:
        self.aux_values.append((self.num_aux, self._check(name, value)))
        self.num_aux += 1
        return Variable(AUX, self.num_aux - 1)

    def alloc_input(self, name: str, value: Any = None) -> Variable:
        self.input_values.append((self.num_inputs, self._check(name, value)))
        self.num_inputs += 1
        return Variable(INPUT, self.num_inputs)

    def call_subcircuit(self, sub: Subcircuit, ports: list, hints: Any) -> list:
        evaluator = self.plan.lookup(self.key, sub.key)
        if evaluator is None:
            return sub.synth(self, ports, hints)
        t = self.plan.template(sub)
        lanes = self.values.lanes
        a0, i0 = self.num_aux, self.num_inputs
        self.num_aux += t.num_aux
        self.num_inputs += t.num_inputs
        values = [p.value for p in ports]
        out_values = evaluator(self.values, values, hints)
        if len(out_values) != len(t.outputs):
            raise AssertionError(f"{sub.key}: evaluator gave {len(out_values)} outputs")
        port_arrays = [lanes_of(v, lanes, k) for v, k in zip(values, sub.ports, strict=True)]
        expected = [
            lanes_of(v, lanes, typ) for v, (_, _, typ) in zip(out_values, t.outputs, strict=True)
        ]
        d = Deferred(lanes, self.aux_base + a0, self.input_base + i0, port_arrays, hints, expected)
        self.plan.defer(sub, d)
        return [
            call_output(kind, idx, typ, value, ports, a0, i0 + 1)
            for (kind, idx, typ), value in zip(t.outputs, out_values, strict=True)
        ]

    def scatter(self, W: np.ndarray, n_inputs: int) -> None:
        """Write this pass's own values into the global assignment."""
        lanes = self.values.lanes
        for j, v in self.aux_values:
            W[n_inputs + self.aux_base + j] = to_limbs(v, lanes)
        for j, v in self.input_values:
            W[self.input_base + j] = to_limbs(v, lanes)


class WitnessPlan:
    """Runs passes and deferred calls; collects the whole assignment in ``W``."""

    def __init__(
        self,
        compiler: Compiler,
        num_inputs: int,
        num_aux: int,
        lookup: Lookup,
        max_lanes: int = 4096,
        templates: Sequence[Template] = (),
    ) -> None:
        self.compiler = compiler
        # templates of an already compiled (or cache-loaded) circuit, by key
        self.known = {t.key: t for t in templates}
        self._walks: dict[str, list[Template]] = {}
        self.num_inputs = num_inputs
        self.lookup = lookup
        self.max_lanes = max_lanes
        self.W = np.zeros((num_inputs + num_aux, 4), dtype=np.uint64)
        self.W[0, 0] = 1  # ONE
        self.queue: dict[str, tuple[Subcircuit, list[Deferred]]] = {}
        self.stats: dict[str, tuple[int, int, float]] = {}  # key -> (passes, lanes, seconds)

    def template(self, sub: Subcircuit) -> Template:
        got = self.known.get(sub.key)
        return got if got is not None else self.compiler.template(sub)

    def defer(self, sub: Subcircuit, d: Deferred) -> None:
        self.queue.setdefault(sub.key, (sub, []))[1].append(d)

    def run(
        self,
        sub: Subcircuit,
        ports: list,
        hints: Any,
        lanes: int,
        aux_base: np.ndarray,
        input_base: np.ndarray,
    ) -> list:
        """One pass of ``sub`` over ``lanes`` instances."""
        t0 = time.perf_counter()
        cs = PlanCS(self, sub.key, LaneValues(lanes, OBJECT_FR), aux_base, input_base)
        port_objs = [
            AllocatedBit(Variable(AUX, -1), v) if k == BIT else AllocatedNum(Variable(AUX, -1), v)
            for v, k in zip(ports, sub.ports, strict=True)
        ]
        out = sub.synth(cs, port_objs, hints)
        t = self.template(sub)
        if cs.num_aux != t.num_aux or cs.num_inputs != t.num_inputs:
            raise AssertionError(
                f"{sub.key}: a witness pass allocated {cs.num_aux} aux / {cs.num_inputs} "
                f"inputs, the template has {t.num_aux} / {t.num_inputs}"
            )
        cs.scatter(self.W, self.num_inputs)
        passes, total, secs = self.stats.get(sub.key, (0, 0, 0.0))
        self.stats[sub.key] = (passes + 1, total + lanes, secs + time.perf_counter() - t0)
        return out

    def _callers_pending(self, key: str) -> bool:
        """Whether a queued key's template (transitively) calls ``key``."""
        for other, (sub, _) in self.queue.items():
            if other == key:
                continue
            for t in self._walk(sub):
                if t.key == key:
                    return True
        return False

    def _walk(self, sub: Subcircuit) -> list[Template]:
        if sub.key not in self._walks:
            self._walks[sub.key] = list(self.template(sub).walk())
        return self._walks[sub.key]

    def drain(self) -> None:
        """Run every deferred call, each key once its callers are done."""
        while self.queue:
            key = next(k for k in self.queue if not self._callers_pending(k))
            sub, records = self.queue.pop(key)
            group: list[Deferred] = []
            size = 0
            for d in [*records, None]:
                if d is None or (group and size + d.lanes > self.max_lanes):
                    self._run_group(sub, group)
                    group, size = [], 0
                if d is not None:
                    group.append(d)
                    size += d.lanes

    def _run_group(self, sub: Subcircuit, group: list[Deferred]) -> None:
        if not group:
            return
        lanes = sum(d.lanes for d in group)
        ports = [np.concatenate([d.ports[p] for d in group]) for p in range(len(sub.ports))]
        hints = concat_hints([d.hints for d in group])
        aux_base = np.concatenate([d.aux_base for d in group])
        input_base = np.concatenate([d.input_base for d in group])
        out = self.run(sub, ports, hints, lanes, aux_base, input_base)
        # the evaluator's values stood in for this pass's outputs: they must agree
        for j, o in enumerate(out):
            got = lanes_of(o.value, lanes, BIT if isinstance(o, AllocatedBit) else "num")
            want = np.concatenate([d.expected[j] for d in group])
            if ((got.astype(object) - want.astype(object)) % R).any():
                raise AssertionError(f"{sub.key}: evaluator output {j} differs from synthesis")

    def report(self) -> list[tuple[str, int, int, float]]:
        return sorted(((k, *v) for k, v in self.stats.items()), key=lambda r: -r[3])
