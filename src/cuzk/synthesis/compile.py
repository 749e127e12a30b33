"""Compile a circuit once: subcircuits become templates, calls become instances.

Filecoin circuits repeat a few shapes thousands of times (a Poseidon hash,
a Merkle level, a whole inclusion proof, a sector). Synthesizing every copy
with Python objects would take hours and tens of gigabytes; instead:

1. :class:`TemplateBuilder` synthesizes each :class:`Subcircuit` **once**, in
   its own local variable space: ONE, its ports (variables the caller
   passes in), its own aux and input variables. Its constraints are stored
   as CSR blocks over *local codes* (kind, index). A call to another
   subcircuit inside it is recorded as a :class:`Call` — the callee's
   compiled template and where its ports are bound — not synthesized again.
2. :func:`flatten` walks the template tree once per *distinct call site*,
   carrying arrays of instances (row, aux and input bases; port columns), so
   that a template called k times is expanded for all k with numpy.
3. :meth:`CompiledCircuit.to_r1cs` writes the CSR matrices by scattering each
   template's local entries at every instance's rows, remapping local codes
   to global columns with one fancy-indexing step per template.

Variable and constraint order is exactly inline synthesis order (a call
reserves a contiguous block of the caller's aux, inputs and rows — where
inline synthesis would have put them); tests compare both on small circuits.
Coefficients are interned in one table (Filecoin circuits use a few
thousand distinct constants), so a compiled circuit is small.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.errors import ResourceError
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import BIT, NUM, Subcircuit
from cuzk.gadgets.values import SCALAR
from cuzk.r1cs import ONE, R1CS, LinearCombination, Variable
from cuzk.r1cs.builder import AUX, INPUT
from cuzk.r1cs.counts import Counts

log = logging.getLogger(__name__)

# Local codes: what a template's entry (or a port binding) refers to.
K_ONE, K_PORT, K_AUX, K_INPUT = 0, 1, 2, 3


def call_output(
    kind: int, idx: int, typ: Any, value: Any, ports: list, aux_base: int, input_base: int
) -> AllocatedBit | AllocatedNum:
    """A call's output, as its template's code (``kind``, ``idx``) names it: the
    constant one, one of the call's ports, or the call's own aux or input
    variable ``idx`` counted from ``aux_base`` / ``input_base``."""
    if kind == K_ONE:
        var = ONE
    elif kind == K_PORT:
        var = ports[idx].variable
    elif kind == K_AUX:
        var = Variable(AUX, aux_base + idx)
    else:
        assert kind == K_INPUT
        var = Variable(INPUT, input_base + idx)
    return AllocatedBit(var, value) if typ == BIT else AllocatedNum(var, value)


class CoefficientTable:
    """Interned Fr coefficients: every distinct value once, referred to by id."""

    def __init__(self) -> None:
        self.values: list[int] = []
        self.ids: dict[int, int] = {}

    def id(self, v: int) -> int:
        v %= R
        got = self.ids.get(v)
        if got is None:
            got = len(self.values)
            self.ids[v] = got
            self.values.append(v)
        return got

    def array(self) -> np.ndarray:
        return fr_to_array(self.values)


@dataclass(frozen=True, eq=False)
class Block:
    """Constraints of one template between two calls, in local codes.

    For each of A, B, C: ``indptr`` (rows + 1), then per entry ``kind``,
    ``index`` and ``coeff`` (an id into the coefficient table).
    """

    num_rows: int
    indptr: tuple[np.ndarray, np.ndarray, np.ndarray]
    kind: tuple[np.ndarray, np.ndarray, np.ndarray]
    index: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeff: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def nnz(self) -> tuple[int, int, int]:
        return tuple(int(p[-1]) for p in self.indptr)  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class Call:
    template: Template
    port_kind: np.ndarray  # (nports,) local codes of the bound variables
    port_index: np.ndarray
    aux_offset: int
    input_offset: int
    row_offset: int


@dataclass(eq=False)
class Template:
    """A compiled subcircuit: counts, its segments, and its outputs."""

    key: str
    num_ports: int
    num_aux: int = 0
    num_inputs: int = 0
    num_rows: int = 0
    segments: list[tuple[int, Block | Call]] = field(default_factory=list)  # (row offset, seg)
    outputs: list[tuple[int, int, str]] = field(default_factory=list)  # (kind, index, NUM|BIT)
    nnz: tuple[int, int, int] = (0, 0, 0)

    def walk(self) -> Iterator[Template]:
        """This template and every template it calls, each once (callees first)."""
        seen: set[int] = set()

        def visit(t: Template) -> Iterator[Template]:
            for _, seg in t.segments:
                if isinstance(seg, Call) and id(seg.template) not in seen:
                    seen.add(id(seg.template))
                    yield from visit(seg.template)
            yield t

        yield from visit(self)


class Compiler:
    """Compiles subcircuits to templates, each key once."""

    def __init__(self) -> None:
        self.coefficients = CoefficientTable()
        self.templates: dict[str, Template] = {}

    def template(self, sub: Subcircuit) -> Template:
        got = self.templates.get(sub.key)
        if got is None:
            got = TemplateBuilder(self, sub).build()
            self.templates[sub.key] = got
        return got


class TemplateBuilder:
    """A constraint system that records one subcircuit in local codes.

    Ports are the first variables (aux 0..nports−1 locally); the
    subcircuit's own aux variables follow. Values are never computed.
    """

    values = SCALAR

    def __init__(self, compiler: Compiler, sub: Subcircuit) -> None:
        self.compiler = compiler
        self.sub = sub
        self.nports = len(sub.ports)
        self.template = Template(key=sub.key, num_ports=self.nports)
        self._aux = self.nports  # next local aux index (ports first)
        self._inputs = 1  # next input index (ONE is input 0)
        self._rows: list[tuple[dict, dict, dict]] = []
        self._block_start = 0
        self._nnz = [0, 0, 0]

    # --- the constraint-system interface -------------------------------------
    def alloc(self, name: str, value: Any = None) -> Variable:
        self._aux += 1
        return Variable(AUX, self._aux - 1)

    def alloc_input(self, name: str, value: Any = None) -> Variable:
        self._inputs += 1
        return Variable(INPUT, self._inputs - 1)

    def enforce(self, name: str, a: Any, b: Any, c: Any) -> None:
        self._rows.append(
            tuple(dict(LinearCombination.of(x).terms) for x in (a, b, c))  # type: ignore[arg-type]
        )

    @contextlib.contextmanager
    def namespace(self, name: str) -> Iterator[TemplateBuilder]:
        yield self

    def call_subcircuit(self, sub: Subcircuit, ports: list, hints: Any) -> list:
        child = self.compiler.template(sub)
        self._flush()
        codes = [self._code(p.variable) for p in ports]
        t = self.template
        call = Call(
            template=child,
            port_kind=np.array([k for k, _ in codes], dtype=np.int8),
            port_index=np.array([i for _, i in codes], dtype=np.int64),
            aux_offset=self._aux - self.nports,
            input_offset=self._inputs - 1,
            row_offset=t.num_rows,
        )
        t.segments.append((t.num_rows, call))
        t.num_rows += child.num_rows
        self._block_start = t.num_rows
        self._nnz = [x + y for x, y in zip(self._nnz, child.nnz, strict=True)]
        aux_base, in_base = self._aux, self._inputs
        self._aux += child.num_aux
        self._inputs += child.num_inputs
        return [
            call_output(kind, idx, typ, None, ports, aux_base, in_base)
            for kind, idx, typ in child.outputs
        ]

    # --- recording ------------------------------------------------------------
    def _code(self, v: Variable) -> tuple[int, int]:
        if v.kind == INPUT:
            return (K_ONE, 0) if v.index == 0 else (K_INPUT, v.index - 1)
        if v.index < self.nports:
            return (K_PORT, v.index)
        return (K_AUX, v.index - self.nports)

    def _flush(self) -> None:
        rows = self._rows
        if not rows:
            return
        coeffs = self.compiler.coefficients
        parts = []
        for m in range(3):
            indptr = np.zeros(len(rows) + 1, dtype=np.int64)
            kinds, idxs, cids = [], [], []
            for r, row in enumerate(rows):
                n = 0
                for var, k in row[m].items():
                    if k % R == 0:
                        continue
                    kind, idx = self._code(var)
                    kinds.append(kind)
                    idxs.append(idx)
                    cids.append(coeffs.id(k))
                    n += 1
                indptr[r + 1] = indptr[r] + n
            parts.append(
                (
                    indptr,
                    np.array(kinds, dtype=np.int8),
                    np.array(idxs, dtype=np.int64),
                    np.array(cids, dtype=np.int64),
                )
            )
        block = Block(
            num_rows=len(rows),
            indptr=tuple(p[0] for p in parts),  # type: ignore[arg-type]
            kind=tuple(p[1] for p in parts),  # type: ignore[arg-type]
            index=tuple(p[2] for p in parts),  # type: ignore[arg-type]
            coeff=tuple(p[3] for p in parts),  # type: ignore[arg-type]
        )
        t = self.template
        t.segments.append((self._block_start, block))
        t.num_rows += len(rows)
        self._nnz = [x + y for x, y in zip(self._nnz, block.nnz, strict=True)]
        self._rows = []
        self._block_start = t.num_rows

    def build(self) -> Template:
        ports = [
            AllocatedBit(Variable(AUX, i), None)
            if kind == BIT
            else AllocatedNum(Variable(AUX, i), None)
            for i, kind in enumerate(self.sub.ports)
        ]
        outputs = self.sub.synth(self, ports, None)
        self._flush()
        t = self.template
        t.num_aux = self._aux - self.nports
        t.num_inputs = self._inputs - 1
        t.nnz = tuple(self._nnz)  # type: ignore[assignment]
        for out in outputs:
            kind, idx = self._code(out.variable)
            t.outputs.append((kind, idx, BIT if isinstance(out, AllocatedBit) else NUM))
        log.debug(
            "compiled %s: %d rows, %d aux, %d inputs", t.key, t.num_rows, t.num_aux, t.num_inputs
        )
        return t


# --------------------------------------------------------------------------
# Densities: which variables a matrix touches, template by template
# --------------------------------------------------------------------------


@dataclass
class _Density:
    """Of one template, for one matrix: which of its own aux variables, ports
    and own inputs occur in it (directly or in a callee), and whether ONE does."""

    aux: np.ndarray
    ports: np.ndarray
    inputs: np.ndarray
    one: bool = False

    def mark(self, kind: np.ndarray, index: np.ndarray) -> None:
        self.aux[index[kind == K_AUX]] = True
        self.ports[index[kind == K_PORT]] = True
        self.inputs[index[kind == K_INPUT]] = True
        self.one = self.one or bool((kind == K_ONE).any())


def _density(t: Template, m: int, memo: dict[int, _Density]) -> _Density:
    got = memo.get(id(t))
    if got is not None:
        return got
    d = _Density(
        np.zeros(t.num_aux, dtype=bool),
        np.zeros(t.num_ports, dtype=bool),
        np.zeros(t.num_inputs, dtype=bool),
    )
    for _, seg in t.segments:
        if isinstance(seg, Block):
            d.mark(seg.kind[m], seg.index[m])
            continue
        c = _density(seg.template, m, memo)
        d.aux[seg.aux_offset : seg.aux_offset + seg.template.num_aux] |= c.aux
        d.inputs[seg.input_offset : seg.input_offset + seg.template.num_inputs] |= c.inputs
        d.one = d.one or c.one
        d.mark(seg.port_kind[c.ports], seg.port_index[c.ports])
    memo[id(t)] = d
    return d


# --------------------------------------------------------------------------
# Flattening: every call site expanded for all its instances at once
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Instances:
    """k instances of one block: where each one's rows and variables land."""

    block: Block
    row_base: np.ndarray  # (k,)
    aux_base: np.ndarray  # (k,) global aux index of the owner template's own aux 0
    input_base: np.ndarray  # (k,) global input index of the owner's own input 0
    port_cols: np.ndarray  # (k, nports) global columns of the owner's ports
    may_alias: bool  # some instance binds two ports to one variable

    def runs(self, entries_each: int, limit: int) -> Iterator[Instances]:
        """These instances in runs of at most ~``limit`` entries (``entries_each``
        an instance), to bound what one pass over a run gathers."""
        k = len(self.row_base)
        step = max(1, limit // max(1, entries_each))
        if step >= k:
            yield self
            return
        for lo in range(0, k, step):
            hi = min(k, lo + step)
            yield Instances(
                self.block,
                self.row_base[lo:hi],
                self.aux_base[lo:hi],
                self.input_base[lo:hi],
                self.port_cols[lo:hi],
                self.may_alias,
            )


def flatten(top: Template, num_inputs_total: int, copies: int = 1) -> list[Instances]:
    """All block instances of ``copies`` back-to-back copies of ``top``."""
    out: list[Instances] = []
    k = np.arange(copies, dtype=np.int64)
    n_in = num_inputs_total

    def expand(
        t: Template,
        row_base: np.ndarray,
        aux_base: np.ndarray,
        input_base: np.ndarray,
        port_cols: np.ndarray,
        alias: bool,
    ) -> None:
        for off, seg in t.segments:
            if isinstance(seg, Block):
                out.append(Instances(seg, row_base + off, aux_base, input_base, port_cols, alias))
                continue
            cols = np.empty((len(row_base), len(seg.port_kind)), dtype=np.int64)
            for p, (kind, idx) in enumerate(zip(seg.port_kind, seg.port_index, strict=True)):
                if kind == K_ONE:
                    cols[:, p] = 0
                elif kind == K_PORT:
                    cols[:, p] = port_cols[:, idx]
                elif kind == K_AUX:
                    cols[:, p] = n_in + aux_base + idx
                else:
                    cols[:, p] = input_base + idx
            child_alias = alias or (
                cols.shape[1] > 1 and bool((np.diff(np.sort(cols, axis=1), axis=1) == 0).any())
            )
            expand(
                seg.template,
                row_base + seg.row_offset,
                aux_base + seg.aux_offset,
                input_base + seg.input_offset,
                cols,
                child_alias,
            )

    expand(
        top,
        k * top.num_rows,
        k * top.num_aux,
        1 + k * top.num_inputs,
        np.zeros((copies, 0), dtype=np.int64),
        False,
    )
    return out


# --------------------------------------------------------------------------
# The compiled circuit
# --------------------------------------------------------------------------


@dataclass(eq=False)
class CompiledCircuit:
    """A whole circuit: ``copies`` back-to-back copies of a top template.

    Counts follow bellperson: ``num_inputs`` includes ONE, ``num_constraints``
    includes the one input constraint per input (``a.len()``).
    """

    circuit_id: str
    top: Template
    copies: int
    coefficients: CoefficientTable

    @property
    def num_inputs(self) -> int:
        return 1 + self.copies * self.top.num_inputs

    @property
    def num_aux(self) -> int:
        return self.copies * self.top.num_aux

    @property
    def num_constraints(self) -> int:
        """Rows of A, B and C: the circuit's constraints plus the input ones."""
        return self.copies * self.top.num_rows + self.num_inputs

    @property
    def num_circuit_constraints(self) -> int:
        """The constraints the circuit enforces (no input constraints)."""
        return self.copies * self.top.num_rows

    @property
    def domain_size(self) -> int:
        return 1 << max(0, (self.num_constraints - 1).bit_length())

    @property
    def nnz(self) -> tuple[int, int, int]:
        """Non-zeros of A, B, C (input constraints included: one each in A)."""
        a, b, c = (self.copies * x for x in self.top.nnz)
        return a + self.num_inputs, b, c

    def templates(self) -> list[Template]:
        return list(self.top.walk())

    def query_sizes(self) -> tuple[int, int]:
        """Points of the proving key's a and b queries, without building A or B.

        a: every input (each has its input constraint in A) and the aux
        variables that occur in A; b: the variables (ONE and inputs included)
        that occur in B — ``len(a_select)`` and ``len(b_select)`` of the
        prover. Computed per template (which of its aux, ports and inputs a
        matrix touches, through its calls too) and counted over the copies.
        """
        memo: dict[int, _Density] = {}
        a = _density(self.top, 0, memo)
        memo.clear()
        b = _density(self.top, 1, memo)
        a_points = self.num_inputs + self.copies * int(a.aux.sum())
        b_points = int(b.one) + self.copies * (int(b.inputs.sum()) + int(b.aux.sum()))
        return a_points, b_points

    def counts(self) -> Counts:
        """The counts that size this circuit's key and a proof's memory."""
        a_points, b_points = self.query_sizes()
        return Counts(
            num_constraints=self.num_constraints,
            num_inputs=self.num_inputs,
            num_aux=self.num_aux,
            nnz=tuple(self.nnz),
            distinct_coefficients=max(1, len(self.coefficients.values)),
            a_points=a_points,
            b_points=b_points,
            circuit_id=self.circuit_id,
        )

    @property
    def csr_bytes(self) -> int:
        """Host memory :meth:`to_r1cs` needs: 8-byte index and 32-byte
        coefficient per non-zero, 8-byte row pointers (three matrices)."""
        return 40 * sum(self.nnz) + 3 * 8 * (self.num_constraints + 1)

    def to_r1cs(self, limit_bytes: int | None = None) -> R1CS:
        """Materialise A, B, C; refuse (ResourceError) beyond ``limit_bytes``."""
        if limit_bytes is not None and self.csr_bytes > limit_bytes:
            raise ResourceError(
                f"{self.circuit_id}: its matrices need {self.csr_bytes / 2**30:.1f} GiB, "
                f"over the {limit_bytes / 2**30:.1f} GiB allowed; use the per-copy "
                "matrices (copy_r1cs / copy_columns) instead"
            )
        return build_r1cs(self)

    def copy_r1cs(self) -> R1CS:
        """The matrices of one copy of the top template, over its own columns
        ``[ONE, its inputs…, its aux…]``, without input constraints.

        Every copy's rows are these rows with columns renamed by
        :meth:`copy_columns` — a WindowPoSt partition's 125M rows are 2349
        renamings of one sector's 53,333 — so A·w can be computed copy by copy
        from a 20 MB matrix instead of a 46 GB one (see :func:`matvec_by_copies`).
        """
        one = CompiledCircuit(self.circuit_id + "/copy", self.top, 1, self.coefficients)
        full = build_r1cs(one)
        rows = self.top.num_rows

        def body(m: SparseMatrix) -> SparseMatrix:
            end = int(m.indptr[rows])
            return SparseMatrix(m.indptr[: rows + 1], m.indices[:end], m.coeffs[:end], m.num_cols)

        return R1CS(
            num_inputs=full.num_inputs,
            num_aux=full.num_aux,
            a=body(full.a),
            b=body(full.b),
            c=body(full.c),
        )

    def copy_columns(self, k: int) -> np.ndarray:
        """Global column of each column of copy ``k``'s :meth:`copy_r1cs`."""
        t = self.top
        inputs = 1 + k * t.num_inputs + np.arange(t.num_inputs, dtype=np.int64)
        aux = self.num_inputs + k * t.num_aux + np.arange(t.num_aux, dtype=np.int64)
        return np.concatenate([np.zeros(1, dtype=np.int64), inputs, aux])


def matvec_by_copies(cc: CompiledCircuit, copy: R1CS, w: list[int]) -> tuple[list, list, list]:
    """(A·w, B·w, C·w) of the whole circuit from one copy's matrices (reference)."""
    out: tuple[list, list, list] = ([], [], [])
    for k in range(cc.copies):
        wk = [w[int(c)] for c in cc.copy_columns(k)]
        for res, m in zip(out, (copy.a, copy.b, copy.c), strict=True):
            res.extend(m.matvec(wk))
    # bellperson's input constraints: x_i in A, nothing in B and C.
    out[0].extend(w[: cc.num_inputs])
    out[1].extend([0] * cc.num_inputs)
    out[2].extend([0] * cc.num_inputs)
    return out


def entries_for(inst: Instances, m: int, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """Global columns and coefficient ids of the entries of one flattened block.

    ``inst`` is one :class:`Instances` of :func:`flatten` (a block and the
    ``k`` places it is instantiated), ``m`` the matrix (0 = A, 1 = B, 2 = C)
    and ``n_in`` the circuit's input count (ONE included), where aux columns
    start. Returns two ``(k, nnz of the block in m)`` arrays: each entry's
    column in the global assignment ``[ONE, inputs…, aux…]`` and its id in
    the circuit's :class:`CoefficientTable`, in the block's CSR order. Used
    to build CSR matrices and to check a witness without building them.
    """
    b = inst.block
    kind, idx = b.kind[m], b.index[m]
    k = len(inst.row_base)
    cols = np.empty((k, len(kind)), dtype=np.int64)
    sel = kind == K_ONE
    cols[:, sel] = 0
    sel = kind == K_PORT
    if sel.any():
        cols[:, sel] = inst.port_cols[:, idx[sel]]
    sel = kind == K_AUX
    if sel.any():
        cols[:, sel] = n_in + inst.aux_base[:, None] + idx[sel][None, :]
    sel = kind == K_INPUT
    if sel.any():
        cols[:, sel] = inst.input_base[:, None] + idx[sel][None, :]
    return cols, np.broadcast_to(b.coeff[m], cols.shape)


# Instances handled at once while a matrix is built: bounds the temporaries
# (positions, columns, ids: ~24 bytes an entry) to ~0.4 GB whatever the circuit.
_BUILD_ENTRIES = 1 << 24


@dataclass
class MatrixParts:
    """One of A, B, C as the builder makes it: row pointers, columns, and each
    entry's id in the circuit's coefficient table (4 bytes, not the 32 of its
    value: :meth:`coeffs` looks values up, whole or a slice at a time)."""

    indptr: np.ndarray  # (rows + 1,) int64
    indices: np.ndarray  # (nnz,) int64
    cids: np.ndarray  # (nnz,) int32
    alias_rows: np.ndarray  # rows that may repeat a column (merged by merged())
    num_cols: int
    table: np.ndarray  # the coefficient table, (ids, 4) uint64

    def coeffs(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return self.table[self.cids[lo:hi]]

    def merged(self) -> MatrixParts:
        """Repeated columns of the alias rows summed (as a merging linear
        combination would), entries that cancel to zero dropped; sums not in
        the table are appended to it (a copy). Consumes these parts: their
        columns and ids are compacted in place, a slice at a time."""
        if not len(self.alias_rows):
            return self
        values = fr_from_array(self.table)
        ids = {v: i for i, v in enumerate(values)}
        cids, indices = self.cids, self.indices
        keep = np.ones(len(cids), dtype=bool)
        dropped = np.zeros(len(self.indptr) - 1, dtype=np.int64)
        for r in self.alias_rows:
            lo, hi = int(self.indptr[r]), int(self.indptr[r + 1])
            first: dict[int, int] = {}
            vals = [values[c] for c in cids[lo:hi]]
            for j in range(hi - lo):
                c = int(indices[lo + j])
                if c in first:
                    vals[first[c]] = (vals[first[c]] + vals[j]) % R
                    keep[lo + j] = False
                else:
                    first[c] = j
            for j in first.values():
                if vals[j] == 0:
                    keep[lo + j] = False
                elif vals[j] not in ids:
                    ids[vals[j]] = len(values)
                    values.append(vals[j])
                cids[lo + j] = ids.get(vals[j], 0)
            dropped[r] = int((~keep[lo:hi]).sum())
        w = 0  # compaction in place: the write position never passes the read
        for lo in range(0, len(keep), _BUILD_ENTRIES):
            k = keep[lo : lo + _BUILD_ENTRIES]
            got = int(k.sum())
            indices[w : w + got] = indices[lo : lo + _BUILD_ENTRIES][k]
            cids[w : w + got] = cids[lo : lo + _BUILD_ENTRIES][k]
            w += got
        indptr = self.indptr
        indptr[1:] -= np.cumsum(dropped)
        return MatrixParts(
            indptr=indptr,
            indices=indices[:w],
            cids=cids[:w],
            alias_rows=np.zeros(0, dtype=np.int64),
            num_cols=self.num_cols,
            table=fr_to_array(values),
        )

    def finish(self) -> SparseMatrix:
        """The CSR matrix (32-byte coefficients), repeated columns merged."""
        parts = self.merged()
        coeffs = parts.coeffs()
        return SparseMatrix(parts.indptr, parts.indices, coeffs, num_cols=self.num_cols)


def matrix_parts(cc: CompiledCircuit, m: int, insts: list[Instances] | None = None) -> MatrixParts:
    """Matrix ``m`` (0 = A, 1 = B, 2 = C) of the circuit, built alone: the
    builder's host memory is this matrix's 12 bytes an entry and 16 a row,
    plus bounded temporaries (:data:`_BUILD_ENTRIES`)."""
    n_in = cc.num_inputs
    n_rows = cc.num_constraints
    body_rows = cc.num_circuit_constraints
    insts = insts if insts is not None else flatten(cc.top, n_in, cc.copies)
    row_nnz = np.zeros(n_rows, dtype=np.int64)
    for inst in insts:
        local = np.diff(inst.block.indptr[m])
        if local.size:
            for part in inst.runs(inst.block.num_rows, _BUILD_ENTRIES):
                rows = part.row_base[:, None] + np.arange(inst.block.num_rows)[None, :]
                row_nnz[rows] = local[None, :]
    if m == 0:
        row_nnz[body_rows:] = 1  # x_i · 0 = 0 puts x_i in A
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    del row_nnz
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=np.int64)
    cids = np.empty(nnz, dtype=np.int32)
    alias_rows: list[np.ndarray] = []
    for inst in insts:
        b = inst.block
        if not b.nnz[m]:
            continue
        local_ptr = b.indptr[m]
        entry_row = np.repeat(np.arange(b.num_rows), np.diff(local_ptr))
        entry_pos = np.arange(b.nnz[m]) - local_ptr[entry_row]
        for part in inst.runs(b.nnz[m], _BUILD_ENTRIES):
            cols, ids = entries_for(part, m, n_in)
            pos = indptr[part.row_base[:, None] + entry_row[None, :]] + entry_pos[None, :]
            indices[pos] = cols
            cids[pos] = ids
            del cols, ids, pos
        if inst.may_alias:
            alias_rows.append((inst.row_base[:, None] + np.arange(b.num_rows)).ravel())
    if m == 0:
        start = indptr[body_rows]
        indices[start:] = np.arange(n_in)
        cids[start:] = cc.coefficients.id(1)
    return MatrixParts(
        indptr=indptr,
        indices=indices,
        cids=cids,
        alias_rows=np.unique(np.concatenate(alias_rows)) if alias_rows else np.zeros(0, np.int64),
        num_cols=n_in + cc.num_aux,
        table=cc.coefficients.array(),
    )


def build_r1cs(cc: CompiledCircuit) -> R1CS:
    insts = flatten(cc.top, cc.num_inputs, cc.copies)
    a, b, c = (matrix_parts(cc, m, insts).finish() for m in range(3))
    return R1CS(num_inputs=cc.num_inputs, num_aux=cc.num_aux, a=a, b=b, c=c)


def compile_circuit(
    circuit_id: str, top: Subcircuit, copies: int = 1, compiler: Compiler | None = None
) -> CompiledCircuit:
    """Compile ``copies`` copies of ``top`` (a subcircuit with no ports)."""
    if top.ports:
        raise ValueError("a top-level circuit takes no ports")
    compiler = compiler or Compiler()
    template = compiler.template(top)
    return CompiledCircuit(circuit_id, template, copies, compiler.coefficients)
