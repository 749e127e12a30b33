"""A witness pass recorded once as a straight-line program, to run on a device.

:class:`cuzk.synthesis.plan.WitnessPlan` computes a subcircuit's witness by
running its synthesis in Python over lane arrays: the cost is Python work
per variable (about 30 s for a 32GiB PoRep partition). The structure of
that work is the same for every partition of a circuit, so here it is
recorded **once**: the same synthesis code runs on a :class:`ProgramCS`
whose values are :class:`TraceValues` — symbols instead of numbers — and
every value computation, allocation and deferred call becomes an
instruction of a :class:`Program`. A program then runs over all the lanes
(instances) of its pass on any :class:`~cuzk.synthesis.static_plan.WitnessDevice`
(the CUDA interpreter ``backends/cuda/kernels/witness.cu``, or the numpy one
of :mod:`cuzk.synthesis.program_numpy`).

Values are typed: ``u`` (a u64 lane: bits 0/1, 32-bit words and their
sums) and ``f`` (an Fr element). Instructions read *operands* — a
register of the program or a constant — and write registers; stores write
the assignment ``W`` at the pass's own aux/input positions. A pass reads its
ports from ``W`` (the caller wrote them first) and its hints from a table of
the partition's hint values. A call the plan defers is recorded as a *site*
(the callee runs as a later pass over all such sites) and its outputs are
valued by a *trace evaluator* (:mod:`cuzk.synthesis.trace_evaluators`): a
few instructions or one macro instruction (SHA-256 compression, Poseidon) —
exactly what the CPU plan's evaluators compute.

The instruction set (:class:`Op`) is mirrored by ``witness.cu``; a test
checks both tables agree. Encoded programs are plain arrays: ``ops`` of
``(n, 6)`` uint32 rows ``[op, d, a, b, c, imm]`` and ``args`` for
variable-length operand lists; an operand with bit 31 set is an index into
the program's constant table of its type.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import BIT, Subcircuit
from cuzk.hashers.poseidon_constants import PoseidonConstants, flat_table
from cuzk.r1cs import Variable
from cuzk.r1cs.builder import AUX, INPUT
from cuzk.synthesis.compile import K_AUX, K_INPUT, K_ONE, K_PORT, Template, call_output

PORT = 2  # Variable kind of a pass's own ports while it is recorded
CONST = 1 << 31  # operand flag: an index into the constant table of its type
U, F = "u", "f"
MASK32 = 0xFFFFFFFF


class Op(IntEnum):
    """The instruction set (``witness.cu`` has the same numbers)."""

    # u64 values: d ← …
    U_PORT = 1  # limb 0 of W[port column imm]
    U_HINT = 2  # limb 0 of hint slot imm
    U_XOR = 3  # a ^ b
    U_AND = 4  # a & b
    U_OR = 5  # a | b
    U_NOT1 = 6  # a ^ 1 (a bit's negation)
    U_ADD = 7  # a + b mod 2^64
    U_SHR = 8  # a >> imm
    U_ROTR = 9  # ((a >> by) | (a << (bits − by))) & (2^bits − 1), imm = by | bits << 8
    U_MASK = 10  # a & (2^imm − 1)
    U_BIT = 11  # (a >> imm) & 1
    U_EQI = 12  # a == imm
    U_LTI = 13  # a < imm
    U_GTI = 14  # a > imm
    U_FROM_BITS = 15  # Σ args[a + 2i] << args[a + 2i + 1], i < b
    U_BSWAP = 16  # the low 32 bits' bytes reversed
    # Fr values: d ← …
    F_PORT = 20  # W[port column imm]
    F_HINT = 21  # hint slot imm
    F_ADD = 22  # a + b
    F_SUB = 23  # a − b
    F_MUL = 24  # a · b
    F_NEG = 25  # −a
    F_SELECT = 26  # a if c (a u operand) ≠ 0 else b
    F_FROM_U = 27  # a (a u operand) as a field element
    F_BIT = 28  # u d ← bit imm of a
    F_WORD = 29  # u d ← 32-bit word imm of a (little-endian)
    F_FROM_WORDS = 30  # Σ args[a + i] · 2^(32 i), i < 8, mod r
    F_INV = 31  # 1 / a (0 for 0)
    # stores (no d)
    ST_AUX_U = 40  # W[aux imm] ← a (a u operand: limb 0)
    ST_AUX_F = 41  # W[aux imm] ← a
    ST_IN_U = 42  # W[input imm] ← a
    ST_IN_F = 43  # W[input imm] ← a
    # macros
    SHA256 = 50  # args[a : a+8] state, [a+8 : a+24] message words → args[a+24 : a+32] (u regs)
    POSEIDON = 51  # f d ← Poseidon(args[a : a+b]) with constants table imm


# operand kinds of the fixed-width instructions (d's kind, source kinds)
_SIGNATURE: dict[Op, tuple[str | None, str]] = {
    Op.U_PORT: (U, ""),
    Op.U_HINT: (U, ""),
    Op.U_XOR: (U, "uu"),
    Op.U_AND: (U, "uu"),
    Op.U_OR: (U, "uu"),
    Op.U_NOT1: (U, "u"),
    Op.U_ADD: (U, "uu"),
    Op.U_SHR: (U, "u"),
    Op.U_ROTR: (U, "u"),
    Op.U_MASK: (U, "u"),
    Op.U_BIT: (U, "u"),
    Op.U_EQI: (U, "u"),
    Op.U_LTI: (U, "u"),
    Op.U_GTI: (U, "u"),
    Op.U_BSWAP: (U, "u"),
    Op.F_PORT: (F, ""),
    Op.F_HINT: (F, ""),
    Op.F_ADD: (F, "ff"),
    Op.F_SUB: (F, "ff"),
    Op.F_MUL: (F, "ff"),
    Op.F_NEG: (F, "f"),
    Op.F_SELECT: (F, "ffu"),
    Op.F_FROM_U: (F, "u"),
    Op.F_BIT: (U, "f"),
    Op.F_WORD: (U, "f"),
    Op.F_INV: (F, "f"),
    Op.ST_AUX_U: (None, "u"),
    Op.ST_AUX_F: (None, "f"),
    Op.ST_IN_U: (None, "u"),
    Op.ST_IN_F: (None, "f"),
}
STORES = (Op.ST_AUX_U, Op.ST_AUX_F, Op.ST_IN_U, Op.ST_IN_F)


class Reg:
    """A value of a program being recorded (single assignment)."""

    __slots__ = ("bit", "id", "kind")

    def __init__(self, id: int, kind: str, bit: Reg | None = None) -> None:
        self.id = id
        self.kind = kind
        self.bit = bit  # for an f value made from a bit: that u value (stores use it)

    def __repr__(self) -> str:
        return f"%{self.kind}{self.id}"


@dataclass(frozen=True)
class HintRef:
    """A leaf of a pass's hints: slot ``slot`` of its hint index, of a kind."""

    slot: int
    kind: str


@dataclass
class Instr:
    op: Op
    dsts: tuple[Reg, ...]
    srcs: tuple[Any, ...]  # Reg or constant int
    imm: int = 0
    shifts: tuple[int, ...] = ()  # U_FROM_BITS


@dataclass
class Site:
    """A deferred call recorded in a program: the callee runs as a later pass."""

    sub: Subcircuit
    aux_offset: int
    input_offset: int
    port_codes: list[tuple[int, int]]  # (K_ONE | K_PORT | K_AUX | K_INPUT, index)
    hint_map: list[int]  # callee hint slot j ← this program's slot hint_map[j]
    hints: Any  # the callee's symbolic hints (slots renumbered)


@dataclass
class Program:
    """A recorded pass, encoded for a device (see the module docstring)."""

    key: str
    ports: tuple[str, ...]  # BIT / NUM per port
    n_slots: int
    ops: np.ndarray  # (n, 6) uint32
    args: np.ndarray  # uint32
    uconst: np.ndarray  # uint64
    fconst: np.ndarray  # (k, 4) uint64, standard form
    n_u: int  # u registers
    n_f: int  # f registers
    sites: list[Site] = field(default_factory=list)

    @property
    def num_ops(self) -> int:
        return len(self.ops)


def is_const(x: Any) -> bool:
    return isinstance(x, bool | int | np.bool_ | np.integer)


class PoseidonTables:
    """The Poseidon constant sets a plan uses, each once (id = order of first use)."""

    def __init__(self) -> None:
        self.ids: dict[PoseidonConstants, int] = {}
        self.tables: list[tuple[tuple[int, int, int], list[int]]] = []

    def id(self, c: PoseidonConstants) -> int:
        got = self.ids.get(c)
        if got is None:
            got = len(self.tables)
            self.ids[c] = got
            self.tables.append(flat_table(c))
        return got

    def arrays(self) -> tuple[np.ndarray, list[int]]:
        """(header (k, 4) uint32: offset, t, half full rounds, partial rounds; values)."""
        head = np.zeros((max(1, len(self.tables)), 4), dtype=np.uint32)
        values: list[int] = []
        for i, ((t, half, partial), vals) in enumerate(self.tables):
            head[i] = (len(values), t, half, partial)
            values += vals
        return head, values or [0]


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------


class Recorder:
    """The instructions of one program, in single-assignment form."""

    def __init__(self, tables: PoseidonTables) -> None:
        self.instrs: list[Instr] = []
        self.tables = tables
        self._next = 0
        self._hint_regs: dict[int, Reg] = {}

    def reg(self, kind: str, bit: Reg | None = None) -> Reg:
        self._next += 1
        return Reg(self._next - 1, kind, bit)

    def emit(self, op: Op, srcs: Sequence[Any] = (), imm: int = 0, kind: str | None = None) -> Reg:
        kind = kind or _SIGNATURE[op][0]
        d = self.reg(kind)
        self.instrs.append(Instr(op, (d,), tuple(srcs), imm))
        return d

    # --- operands -----------------------------------------------------------
    def u(self, x: Any) -> Any:
        """A u operand: a register or a constant int."""
        if isinstance(x, Reg):
            if x.kind != U:
                raise TypeError(f"{x}: an Fr value where a bit or word was expected")
            return x
        if isinstance(x, HintRef):
            return self.hint(x, U)
        if is_const(x):
            return int(x)
        raise TypeError(f"cannot record {type(x).__name__} as a bit or word")

    def f(self, x: Any) -> Any:
        """An f operand: a register or a constant int (reduced mod r)."""
        if isinstance(x, Reg):
            if x.kind != F:
                raise TypeError(f"{x}: a bit or word where an Fr value was expected")
            return x
        if isinstance(x, HintRef):
            return self.hint(x, F)
        if is_const(x):
            return int(x) % R
        raise TypeError(f"cannot record {type(x).__name__} as an Fr value")

    def hint(self, h: HintRef, kind: str) -> Reg:
        if h.kind != kind:
            raise TypeError(f"hint slot {h.slot} holds {h.kind} values, used as {kind}")
        got = self._hint_regs.get(h.slot)
        if got is None:
            got = self.emit(Op.U_HINT if kind == U else Op.F_HINT, imm=h.slot)
            self._hint_regs[h.slot] = got
        return got

    # --- stores ---------------------------------------------------------------
    def store(self, j: int, value: Any, aux: bool) -> None:
        """W at own aux (or input) j ← value (f, u or a constant)."""
        if isinstance(value, HintRef):
            value = self.hint(value, value.kind)
        if isinstance(value, Reg):
            if value.kind == F and value.bit is not None:
                value = value.bit
            kind = value.kind
        elif is_const(value):
            value = int(value) % R
            kind = U if value < 1 << 64 else F  # a small constant has a u64's limbs
        else:
            raise TypeError(f"cannot store {type(value).__name__} in the assignment")
        if aux:
            op = Op.ST_AUX_U if kind == U else Op.ST_AUX_F
        else:
            op = Op.ST_IN_U if kind == U else Op.ST_IN_F
        self.instrs.append(Instr(op, (), (value,), j))

    # --- macros ---------------------------------------------------------------
    def sha256(self, state: Sequence[Any], words: Sequence[Any]) -> list[Any]:
        """One SHA-256 compression of 32-bit word operands (8 state, 16 message)."""
        assert len(state) == 8 and len(words) == 16
        srcs = tuple(self.u(x) for x in [*state, *words])
        if all(is_const(x) for x in srcs):
            from cuzk.hashers.sha256 import compress

            with np.errstate(over="ignore"):
                st = [np.uint32(x) for x in srcs[:8]]
                out = compress(np, st, [np.uint32(x) for x in srcs[8:]])
            return [int(x) for x in out]
        dsts = tuple(self.reg(U) for _ in range(8))
        self.instrs.append(Instr(Op.SHA256, dsts, srcs))
        return list(dsts)

    def poseidon(self, preimage: Sequence[Any], c: PoseidonConstants) -> Reg:
        d = self.reg(F)
        srcs = tuple(self.f(x) for x in preimage)
        self.instrs.append(Instr(Op.POSEIDON, (d,), srcs, self.tables.id(c)))
        return d


class TraceValues:
    """The values interface of :mod:`cuzk.gadgets.values`, recording instructions.

    Mirrors :class:`~cuzk.gadgets.values.LaneValues` exactly: constants (Python
    ints and bools) fold as they do there; anything else becomes an
    instruction whose result is a :class:`Reg`.
    """

    lanes = None

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    # --- Fr ---------------------------------------------------------------
    def _fr2(self, op: Op, a: Any, b: Any) -> Any:
        r = self.rec
        return r.emit(op, (r.f(a), r.f(b)))

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return (a + b) % R
        if isinstance(b, int) and b % R == 0:
            return self.rec.f(a)
        if isinstance(a, int) and a % R == 0:
            return self.rec.f(b)
        return self._fr2(Op.F_ADD, a, b)

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return (a - b) % R
        return self._fr2(Op.F_SUB, a, b)

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b % R
        if isinstance(b, int) and b % R == 1:
            return self.rec.f(a)
        if isinstance(a, int) and a % R == 1:
            return self.rec.f(b)
        return self._fr2(Op.F_MUL, a, b)

    def square(self, a):
        return a * a % R if isinstance(a, int) else self._fr2(Op.F_MUL, a, a)

    def neg(self, a):
        return (-a) % R if isinstance(a, int) else self.rec.emit(Op.F_NEG, (self.rec.f(a),))

    def select(self, bit, a, b):
        if isinstance(bit, bool | np.bool_):
            return a if bit else b
        r = self.rec
        return r.emit(Op.F_SELECT, (r.f(a), r.f(b), r.u(bit)))

    def from_bit(self, bit):
        if isinstance(bit, bool | np.bool_):
            return int(bit)
        r = self.rec
        b = r.u(bit)
        d = r.reg(F, bit=b)
        r.instrs.append(Instr(Op.F_FROM_U, (d,), (b,)))
        return d

    def bits_le(self, a, count: int) -> list:
        if isinstance(a, int):
            return [bool((a >> i) & 1) for i in range(count)]
        src = self.rec.f(a)
        return [self.rec.emit(Op.F_BIT, (src,), i) for i in range(count)]

    def canonical(self, a):
        return a % R if isinstance(a, int) else a

    def inverse(self, a):
        if isinstance(a, int):
            return pow(a, -1, R)
        return self.rec.emit(Op.F_INV, (self.rec.f(a),))

    # --- bits ---------------------------------------------------------------
    def _bit2(self, op: Op, a, b, fold: Callable[[Any, bool], Any]):
        """A bit operation with at most one constant operand (folded)."""
        ca, cb = isinstance(a, bool | np.bool_), isinstance(b, bool | np.bool_)
        if ca or cb:
            c, x = (a, b) if ca else (b, a)
            return fold(x, bool(c))
        r = self.rec
        return r.emit(op, (r.u(a), r.u(b)))

    def b_and(self, a, b):
        if isinstance(a, bool | np.bool_) and isinstance(b, bool | np.bool_):
            return bool(a) & bool(b)
        return self._bit2(Op.U_AND, a, b, lambda x, c: x if c else False)

    def b_xor(self, a, b):
        if isinstance(a, bool | np.bool_) and isinstance(b, bool | np.bool_):
            return bool(a) ^ bool(b)
        return self._bit2(Op.U_XOR, a, b, lambda x, c: self.b_not(x) if c else x)

    def b_or(self, a, b):
        if isinstance(a, bool | np.bool_) and isinstance(b, bool | np.bool_):
            return bool(a) | bool(b)
        return self._bit2(Op.U_OR, a, b, lambda x, c: True if c else x)

    def b_not(self, a):
        if isinstance(a, bool | np.bool_):
            return not a
        return self.rec.emit(Op.U_NOT1, (self.rec.u(a),))

    # --- words ----------------------------------------------------------------
    def w_sum(self, values: Sequence) -> Any:
        const = sum(int(v) for v in values if is_const(v))
        regs = [self.rec.u(v) for v in values if not is_const(v)]
        if not regs:
            return const
        acc = regs[0]
        for v in regs[1:]:
            acc = self.rec.emit(Op.U_ADD, (acc, v))
        return self.rec.emit(Op.U_ADD, (acc, const)) if const else acc

    def w_bit(self, v, i: int):
        if is_const(v):
            return bool((int(v) >> i) & 1)
        return self.rec.emit(Op.U_BIT, (self.rec.u(v),), i)

    def w_mask(self, v, bits: int):
        if is_const(v):
            return int(v) & ((1 << bits) - 1)
        return self.rec.emit(Op.U_MASK, (self.rec.u(v),), bits)

    def w_rotr(self, v, by: int, bits: int = 32):
        if is_const(v):
            m = (1 << bits) - 1
            v = int(v)
            return ((v >> by) | (v << (bits - by))) & m
        return self.rec.emit(Op.U_ROTR, (self.rec.u(v),), by | bits << 8)

    def w_shr(self, v, by: int):
        return int(v) >> by if is_const(v) else self.rec.emit(Op.U_SHR, (self.rec.u(v),), by)

    def w_xor(self, a, b):
        if is_const(a) and is_const(b):
            return int(a) ^ int(b)
        if is_const(b) and int(b) == 0:
            return self.rec.u(a)
        if is_const(a) and int(a) == 0:
            return self.rec.u(b)
        return self.rec.emit(Op.U_XOR, (self.rec.u(a), self.rec.u(b)))

    def w_from_bits(self, bits: Sequence) -> Any:
        const = sum(int(bool(b)) << i for i, b in enumerate(bits) if is_const(b))
        pairs = [(self.rec.u(b), i) for i, b in enumerate(bits) if not is_const(b)]
        if not pairs:
            return const
        if const:
            pairs.append((const, 0))
        d = self.rec.reg(U)
        srcs, shifts = zip(*pairs, strict=True)
        self.rec.instrs.append(Instr(Op.U_FROM_BITS, (d,), tuple(srcs), 0, tuple(shifts)))
        return d

    # --- helpers for trace evaluators ---------------------------------------
    def gt(self, v, j: int):
        return int(v) > j if is_const(v) else self.rec.emit(Op.U_GTI, (self.rec.u(v),), j)

    def lt(self, v, j: int):
        return int(v) < j if is_const(v) else self.rec.emit(Op.U_LTI, (self.rec.u(v),), j)


# --------------------------------------------------------------------------
# The constraint system a pass is recorded on
# --------------------------------------------------------------------------

# trace evaluator(values, port values, hints) -> output values (one per template output)
TraceEvaluator = Callable[[TraceValues, list, Any], list]
TraceLookup = Callable[[str, str], TraceEvaluator | None]


def symbolic(structure: Any, kinds: list[str], parent: list[int] | None = None) -> Any:
    """Hints with every leaf replaced by a :class:`HintRef` numbered in traversal
    order. Leaves are numpy arrays (top level: ``kinds`` gets each one's kind)
    or HintRefs of a caller (``parent`` gets the caller's slot of each)."""
    if structure is None:
        return None
    if isinstance(structure, HintRef):
        if parent is None:
            raise TypeError("a hint reference where hint arrays were expected")
        parent.append(structure.slot)
        kinds.append(structure.kind)
        return HintRef(len(kinds) - 1, structure.kind)
    if isinstance(structure, np.ndarray):
        if parent is not None:
            raise TypeError("a deferred call's hints must come from its caller's hints")
        kinds.append(F if structure.dtype == object else U)
        return HintRef(len(kinds) - 1, kinds[-1])
    if is_dataclass(structure):
        return type(structure)(
            **{
                f.name: symbolic(getattr(structure, f.name), kinds, parent)
                for f in fields(structure)
            }
        )
    if isinstance(structure, list | tuple):
        return type(structure)(symbolic(x, kinds, parent) for x in structure)
    raise TypeError(f"hints hold arrays, lists, tuples and dataclasses, not {type(structure)}")


def hint_leaves(structure: Any) -> list[np.ndarray]:
    """The leaf arrays of hints, in the order :func:`symbolic` numbers them."""
    out: list[np.ndarray] = []

    def walk(s: Any) -> None:
        if s is None:
            return
        if isinstance(s, np.ndarray):
            out.append(s)
        elif is_dataclass(s):
            for f in fields(s):
                walk(getattr(s, f.name))
        elif isinstance(s, list | tuple):
            for x in s:
                walk(x)
        else:
            raise TypeError(f"hints hold arrays, lists, tuples and dataclasses, not {type(s)}")

    walk(structure)
    return out


class ProgramCS:
    """A constraint system that records one pass of a subcircuit as a program."""

    def __init__(
        self,
        key: str,
        lookup: TraceLookup,
        template: Callable[[Subcircuit], Template],
        tables: PoseidonTables,
    ) -> None:
        self.key = key
        self.lookup = lookup
        self.template = template
        self.rec = Recorder(tables)
        self.values = TraceValues(self.rec)
        self.num_aux = 0
        self.num_inputs = 0
        self.sites: list[Site] = []

    def alloc(self, name: str, value: Any = None) -> Variable:
        self.rec.store(self.num_aux, value, aux=True)
        self.num_aux += 1
        return Variable(AUX, self.num_aux - 1)

    def alloc_input(self, name: str, value: Any = None) -> Variable:
        self.rec.store(self.num_inputs, value, aux=False)
        self.num_inputs += 1
        return Variable(INPUT, self.num_inputs)

    def enforce(self, name: str, a: Any, b: Any, c: Any) -> None:
        pass

    @contextlib.contextmanager
    def namespace(self, name: str) -> Iterator[ProgramCS]:
        yield self

    @staticmethod
    def _code(v: Variable) -> tuple[int, int]:
        if v.kind == PORT:
            return (K_PORT, v.index)
        if v.kind == INPUT:
            return (K_ONE, 0) if v.index == 0 else (K_INPUT, v.index - 1)
        return (K_AUX, v.index)

    def call_subcircuit(self, sub: Subcircuit, ports: list, hints: Any) -> list:
        evaluator = self.lookup(self.key, sub.key)
        if evaluator is None:
            return sub.synth(self, ports, hints)
        t = self.template(sub)
        a0, i0 = self.num_aux, self.num_inputs
        self.num_aux += t.num_aux
        self.num_inputs += t.num_inputs
        kinds: list[str] = []
        hint_map: list[int] = []
        callee_hints = symbolic(hints, kinds, hint_map)
        codes = [self._code(p.variable) for p in ports]
        self.sites.append(Site(sub, a0, i0, codes, hint_map, callee_hints))
        out_values = evaluator(self.values, [p.value for p in ports], hints)
        if len(out_values) != len(t.outputs):
            raise AssertionError(f"{sub.key}: trace evaluator gave {len(out_values)} outputs")
        outs = []
        for (kind, idx, typ), value in zip(t.outputs, out_values, strict=True):
            # the callee's outputs are written now: later passes read them as ports
            if kind == K_AUX:
                self.rec.store(a0 + idx, value, aux=True)
            elif kind == K_INPUT:
                self.rec.store(i0 + idx, value, aux=False)
            outs.append(call_output(kind, idx, typ, value, ports, a0, i0 + 1))
        return outs


def record(
    sub: Subcircuit,
    hints: Any,
    lookup: TraceLookup,
    template: Callable[[Subcircuit], Template],
    tables: PoseidonTables,
    n_slots: int,
) -> Program:
    """Record one pass of ``sub`` (``hints`` symbolic, with ``n_slots`` leaves)."""
    cs = ProgramCS(sub.key, lookup, template, tables)
    rec = cs.rec
    ports = []
    for p, kind in enumerate(sub.ports):
        if kind == BIT:
            ports.append(AllocatedBit(Variable(PORT, p), rec.emit(Op.U_PORT, imm=p)))
        else:
            ports.append(AllocatedNum(Variable(PORT, p), rec.emit(Op.F_PORT, imm=p)))
    sub.synth(cs, ports, hints)
    t = template(sub)
    if cs.num_aux != t.num_aux or cs.num_inputs != t.num_inputs:
        raise AssertionError(
            f"{sub.key}: the recorded pass allocated {cs.num_aux} aux / {cs.num_inputs} "
            f"inputs, the template has {t.num_aux} / {t.num_inputs}"
        )
    return encode(sub, rec.instrs, n_slots, cs.sites)


# --------------------------------------------------------------------------
# Encoding: dead code, registers, arrays
# --------------------------------------------------------------------------


def _live(instrs: list[Instr]) -> list[Instr]:
    """The instructions that stores and macros depend on (others are dropped)."""
    needed: set[int] = set()
    keep = [False] * len(instrs)
    for k in range(len(instrs) - 1, -1, -1):
        ins = instrs[k]
        if ins.op in STORES or any(d.id in needed for d in ins.dsts):
            keep[k] = True
            for s in ins.srcs:
                if isinstance(s, Reg):
                    needed.add(s.id)
    return [ins for ins, k in zip(instrs, keep, strict=True) if k]


def _src_kinds(ins: Instr) -> str:
    if ins.op in (Op.U_FROM_BITS, Op.SHA256, Op.F_FROM_WORDS):
        return U * len(ins.srcs)
    if ins.op == Op.POSEIDON:
        return F * len(ins.srcs)
    return _SIGNATURE[ins.op][1]


def encode(sub: Subcircuit, instrs: list[Instr], n_slots: int, sites: list[Site]) -> Program:
    """Dead-code elimination, register allocation (linear scan: a register is
    reused once its value is dead), and the array form."""
    instrs = _live(instrs)
    last: dict[int, int] = {}
    for k, ins in enumerate(instrs):
        for s in ins.srcs:
            if isinstance(s, Reg):
                last[s.id] = k
    free: dict[str, list[int]] = {U: [], F: []}
    count = {U: 0, F: 0}
    phys: dict[int, int] = {}
    uconst: dict[int, int] = {}
    fconst: dict[int, int] = {}
    ops = np.zeros((len(instrs), 6), dtype=np.uint32)
    args: list[int] = []

    def operand(s: Any, kind: str) -> int:
        if isinstance(s, Reg):
            return phys[s.id]
        table = uconst if kind == U else fconst
        v = int(s) if kind == U else int(s) % R
        if kind == U and not 0 <= v < 1 << 64:
            raise ValueError(f"u constant {v} out of range")
        idx = table.setdefault(v, len(table))
        return CONST | idx

    for k, ins in enumerate(instrs):
        kinds = _src_kinds(ins)
        srcs = [operand(s, kd) for s, kd in zip(ins.srcs, kinds, strict=True)]
        # every instruction reads all its operands before writing: dead
        # sources can be reused by its destinations
        for s in {s.id: s for s in ins.srcs if isinstance(s, Reg)}.values():
            if last[s.id] == k:
                free[s.kind].append(phys[s.id])
        dsts = []
        for d in ins.dsts:
            if free[d.kind]:
                p = free[d.kind].pop()
            else:
                p = count[d.kind]
                count[d.kind] += 1
            phys[d.id] = p
            dsts.append(p)
        for d in ins.dsts:
            if d.id not in last:  # written but never read (a macro's spare output)
                free[d.kind].append(phys[d.id])
        row = [int(ins.op), dsts[0] if dsts else 0, 0, 0, 0, ins.imm]
        if ins.op == Op.U_FROM_BITS:
            row[2], row[3] = len(args), len(srcs)
            for s, sh in zip(srcs, ins.shifts, strict=True):
                args += [s, sh]
        elif ins.op == Op.SHA256:
            row[2] = len(args)
            args += srcs + dsts
        elif ins.op in (Op.POSEIDON, Op.F_FROM_WORDS):
            row[2], row[3] = len(args), len(srcs)
            args += srcs
        else:
            row[2 : 2 + len(srcs)] = srcs
        ops[k] = row
    return Program(
        key=sub.key,
        ports=sub.ports,
        n_slots=n_slots,
        ops=ops,
        args=np.array(args or [0], dtype=np.uint32),
        uconst=np.array(list(uconst) or [0], dtype=np.uint64),
        fconst=fr_to_array(list(fconst) or [0]),
        n_u=count[U],
        n_f=count[F],
        sites=sites,
    )
