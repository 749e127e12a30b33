"""The Groth16 prover, written once against the backend contract.

For an assignment w = [ONE, inputs, aux] of an R1CS (A, B, C) and a proving
key (bellperson's layout, :mod:`cuzk.groth16.keys`):

1. a, b, c = A·w, B·w, C·w                       (evaluations on the domain)
2. h = (a·b − c) / Z, as m − 1 coefficients      (on the coset g·⟨ω⟩)
3. H = Σ hᵢ·h_query,  L = Σ auxⱼ·l_query,
   ΣA = Σ w·a_query,  ΣB₁ = Σ w·b_g1_query,  ΣB₂ = Σ w·b_g2_query
   (a and b queries over the variables their density masks keep)
4. with random r, s:
   A = α + r·δ + ΣA
   B = β + s·δ + ΣB₂
   C = s·ΣA + r·ΣB₁ + rs·δ + s·α + r·β + H + L

Step 2 is the key's :class:`Reduction` (arkworks' ``R1CSToQAP``): the
scalars its H points take. bellperson's (:data:`BELLPERSON`) is the one
above; a snarkjs key's H points absorb the division by Z and take A·B − C on
an odd coset instead (:mod:`cuzk.formats.zkey_prover`). Everything else is
this one body.
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends.base import Backend, Gathered
from cuzk.errors import BadPoint, InputError
from cuzk.groth16.keys import QUERIES, KeySource, ProvingKey, VerifyingKey, point_bytes
from cuzk.groth16.proof import Proof
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reduction:
    """How the H query's scalars come from the constraint evaluations
    (arkworks' ``R1CSToQAP``): ``h(backend, a, b[, c])`` with a = A·w, b = B·w
    (and c = C·w when the key has a C matrix); ``step`` names its stage in
    :class:`StageTimes`."""

    step: str
    h: Callable[..., Any]


# The names of the constraint matrices as a key's parts (beside QUERIES).
MATRICES = ("A", "B", "C")

# bellperson's (Filecoin's): the m − 1 coefficients of (A·B − C)/Z, on the coset g·⟨ω⟩.
BELLPERSON = Reduction("h_poly", lambda be, a, b, c: be.h_poly(a, b, c))


@dataclass
class PreparedKey:
    """A proving key with its bases made ready on one backend, for one R1CS shape.

    It keeps the verifying key and the backend's own copies of the bases, not
    the proving key's arrays: a freshly generated key's host memory (44 GiB
    for a 32GiB PoRep) is free to go once it is prepared.
    """

    vk: VerifyingKey
    backend: Backend
    h: Any
    l: Any
    a: Any
    b_g1: Any
    b_g2: Any
    a_select: np.ndarray  # assignment indices feeding the a query
    b_select: np.ndarray  # assignment indices feeding the b queries
    num_inputs: int
    r1cs: R1CS | None = None  # the circuit whose matrices follow
    num_variables: int = 0  # its assignment's length (0: not known, a snarkjs key)
    matrices: tuple[Any, ...] = ()  # A, B, C made ready on the backend
    a_index: Any = None  # a_select / b_select where the backend gathers (Backend.prepare_index)
    b_index: Any = None
    reduction: Reduction = BELLPERSON

    def spmv_operands(self, r1cs: R1CS | None) -> tuple[Any, ...]:
        """The matrices as the backend takes them: the prepared ones for the
        key's own circuit (``r1cs`` None or the key's), else ``r1cs``'s A, B, C."""
        if self.matrices and (r1cs is None or r1cs is self.r1cs):
            return self.matrices
        return (r1cs.a, r1cs.b, r1cs.c)

    def close(self) -> None:
        """Give back what the backend holds for this key (device memory); idempotent.

        A closed key must not be used again.
        """
        _close_all((self.h, self.l, self.a, self.b_g1, self.b_g2, *self.matrices))
        _close_all((self.a_index, self.b_index))
        self.matrices = ()
        self.a_index = self.b_index = None


def _close_all(handles) -> None:
    """close() the backend handles that hold memory (the CPU's hold none)."""
    for handle in handles:
        close = getattr(handle, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class KeyLayout:
    """What a proving key for an R1CS must hold: the points of each query, and
    which assignment entries feed the a and b queries (their density masks)."""

    counts: dict[str, int]  # points per query, and "ic" (the inputs, ONE included)
    a_select: np.ndarray
    b_select: np.ndarray

    @staticmethod
    def of(r1cs: R1CS) -> KeyLayout:
        ni = r1cs.num_inputs
        a_select = np.concatenate(
            [np.arange(ni), ni + np.flatnonzero(r1cs.a_aux_density())]
        ).astype(np.int64)
        b_select = np.flatnonzero(r1cs.b.column_mask()).astype(np.int64)
        counts = {
            "h": _domain_size(r1cs.num_constraints) - 1,
            "l": r1cs.num_aux,
            "a": len(a_select),
            "b_g1": len(b_select),
            "b_g2": len(b_select),
            "ic": ni,
        }
        return KeyLayout(counts, a_select, b_select)

    def check(self, have: dict[str, int], source: str) -> None:
        """InputError naming the first query whose count differs from the circuit's."""
        for name, want in self.counts.items():
            if have[name] != want:
                raise InputError(
                    source,
                    name,
                    f"{have[name]} points, the circuit needs {want}: key and circuit differ "
                    "(a key for another circuit, or another version of it)",
                )


def prepare(
    pk: ProvingKey, r1cs: R1CS, backend: Backend, resident: Mapping[str, bool] | None = None
) -> PreparedKey:
    """Check that a key in memory fits an R1CS and load its bases into a backend
    (each part resident or streamed as ``resident`` says: see :func:`load`)."""
    layout = KeyLayout.of(r1cs)
    have = {name: len(getattr(pk, name)) for name in QUERIES} | {"ic": len(pk.vk.ic)}
    layout.check(have, "proving key")

    make = _from_arrays(backend, {q: getattr(pk, q) for q in QUERIES}, resident)
    return _prepared(
        pk.vk, layout.a_select, layout.b_select, r1cs, backend, make, resident=resident
    )


def load(
    source: KeySource,
    r1cs: R1CS,
    backend: Backend,
    progress: Callable[[int, int], None] | None = None,
    resident: Mapping[str, bool] | None = None,
) -> PreparedKey:
    """Prepare a key from a :class:`KeySource` (a .params file, a development
    key), streamed into the backend a chunk at a time.

    The source's counts are checked against the circuit before any point is
    read; a bad point is an InputError naming the source, the query, the
    point and where it lives (a file offset). ``progress(bytes_done,
    bytes_total)`` follows the points read. ``resident`` says, per part (the
    queries' names and the matrices' "A", "B", "C"), whether the backend keeps
    it in device memory (True) or streams it from pinned host memory (False);
    a part it does not name, the backend places by the room it has.
    """
    layout = KeyLayout.of(r1cs)
    have = {name: source.count(name) for name in QUERIES} | {"ic": len(source.vk.ic)}
    layout.check(have, source.name)
    total = sum(source.count(q) * point_bytes(q) for q in QUERIES)
    done_before = 0

    def make(query: str) -> Any:
        nonlocal done_before
        base, size = done_before, point_bytes(query)
        step = None if progress is None else (lambda pts: progress(base + pts * size, total))
        fn = backend.load_g2 if query == "b_g2" else backend.load_g1
        where = None if resident is None else resident.get(query)
        try:
            handle = fn(source.count(query), source.reader(query), step, where)
        except BadPoint as e:
            raise InputError(
                source.name,
                f"{query}[{e.index}]",
                f"{e.problem} ({source.where(query, e.index)}): the file is damaged, or not a key",
            ) from None
        done_before += source.count(query) * size
        return handle

    return _prepared(
        source.vk, layout.a_select, layout.b_select, r1cs, backend, make, resident=resident
    )


def prepare_parts(
    vk: VerifyingKey,
    bases: dict[str, np.ndarray],
    matrices: Sequence[SparseMatrix],
    a_select: np.ndarray,
    b_select: np.ndarray,
    num_inputs: int,
    backend: Backend,
    reduction: Reduction,
) -> PreparedKey:
    """A key made of parts that are not a :class:`ProvingKey` for an R1CS (a
    snarkjs key: its own QAP matrices A and B, bases and reduction), made
    ready as :func:`prepare` makes one. ``bases`` holds the five queries
    (:data:`QUERIES`); the key proves with ``prove(key, None, assignment)``."""
    make = _from_arrays(backend, bases)
    return _prepared(vk, a_select, b_select, matrices, backend, make, num_inputs, reduction)


def _from_arrays(
    backend: Backend, bases: dict[str, np.ndarray], resident: Mapping[str, bool] | None = None
) -> Callable[[str], Any]:
    """make(query): that query's bases in memory, prepared on the backend."""

    def make(query: str) -> Any:
        arr = bases[query]
        where = None if resident is None else resident.get(query)
        fn = backend.prepare_g2 if query == "b_g2" else backend.prepare_g1
        return fn(arr, where)

    return make


def _prepared(
    vk: VerifyingKey,
    a_select: np.ndarray,
    b_select: np.ndarray,
    circuit: R1CS | Sequence[SparseMatrix],
    backend: Backend,
    make: Callable[[str], Any],
    num_inputs: int | None = None,
    reduction: Reduction = BELLPERSON,
    resident: Mapping[str, bool] | None = None,
) -> PreparedKey:
    """The bases made by ``make(query)``, the matrices (an R1CS's A, B, C, or
    the given ones, each resident or streamed as ``resident`` says by its
    name, "A", "B" or "C") and the a / b selections, ready on the backend; on
    a failure, what was made before it is given back."""
    r1cs = circuit if isinstance(circuit, R1CS) else None
    matrices = (r1cs.a, r1cs.b, r1cs.c) if r1cs is not None else tuple(circuit)
    handles: list[Any] = []
    took: dict[str, float] = {}  # seconds per part: where a key's load spends its time
    try:
        for query in QUERIES:
            t = time.perf_counter()
            handles.append(make(query))
            took[query] = time.perf_counter() - t
        for name, m in zip(MATRICES, matrices, strict=False):
            keep = True if resident is None else resident.get(name, True)
            t = time.perf_counter()
            handles.append(backend.prepare_matrix(m, keep))
            took[name] = time.perf_counter() - t
        t = time.perf_counter()
        handles.append(backend.prepare_index(a_select))
        handles.append(backend.prepare_index(b_select))
        took["index"] = time.perf_counter() - t
    except BaseException:
        _close_all(handles)
        raise
    log.info(
        "key prepared on %s in %.2f s (%s)",
        backend.name,
        sum(took.values()),
        ", ".join(f"{k} {v:.2f} s" for k, v in took.items()),
    )
    h, l_, a, b_g1, b_g2, *prepared, a_index, b_index = handles
    return PreparedKey(
        vk=vk,
        backend=backend,
        h=h,
        l=l_,
        a=a,
        b_g1=b_g1,
        b_g2=b_g2,
        a_select=a_select,
        b_select=b_select,
        num_inputs=r1cs.num_inputs if r1cs is not None else int(num_inputs or 0),
        r1cs=r1cs,
        num_variables=r1cs.num_variables if r1cs is not None else 0,
        matrices=tuple(prepared),
        a_index=a_index,
        b_index=b_index,
        reduction=reduction,
    )


def _domain_size(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass
class StageTimes:
    """Wall seconds per prover stage (filled in as the proof runs).

    ``seconds``: the stages (spmv, h_poly, msm_g1, msm_g2, assemble; each
    mark waits for the calling thread's queued work, so asynchronous work is
    charged to its own stage); ``detail``: finer steps (upload of the
    assignment, the gathers of the a and b scalars, each MSM, and with a
    forking backend ``side_wait``, what the prover waited for the side
    branch after H's MSM); ``phases``: each MSM's phases in milliseconds, as
    its backend reports them. msm_g1 is the sum of its steps. With a forking
    backend the side branch's steps (gather, L, A, B in G1, msm_g2) overlap
    h_poly and H's MSM: the stages then add up to more than the proof's time.
    """

    seconds: dict[str, float] = field(default_factory=dict)
    detail: dict[str, float] = field(default_factory=dict)
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    sync: Callable[[], None] | None = None

    def mark(self, stage: str, since: float, detail: bool = False) -> float:
        if self.sync is not None:
            self.sync()
        now = time.perf_counter()
        into = self.detail if detail else self.seconds
        into[stage] = into.get(stage, 0.0) + now - since
        return now

    def msm(self, name: str) -> dict[str, float]:
        return self.phases.setdefault(name, {})

    def total(self, steps: Sequence[str]) -> float:
        """The seconds of these finer steps so far."""
        return sum(self.detail.get(k, 0.0) for k in steps)


# The queries whose scalars are the assignment's own (beside H's).
SIDE_QUERIES = ("l", "a", "b_g1", "b_g2")

# The finer steps whose sum is the msm_g1 stage.
_G1_STEPS = ("gather", "msm_h", "msm_l", "msm_a", "msm_b_g1")


def prove(
    key: PreparedKey,
    r1cs: R1CS | None,
    assignment: Any,
    r: int | None = None,
    s: int | None = None,
    times: StageTimes | None = None,
    lean: bool = False,
    fork_share: int | None = None,
) -> Proof:
    """A Groth16 proof for a full assignment ((n, 4) uint64: a host array, or
    the backend's own array when the witness was made there).

    ``r1cs`` is the circuit whose matrices the assignment is evaluated on;
    None means the key's own prepared matrices (a key on a device, which let
    go of the host's; a snarkjs key, :func:`prepare_parts`). The assignment's
    length is checked against the circuit's (``r1cs``, else the key's own,
    when it knows it). The assignment crosses to the backend once; the a and
    b queries' scalars are gathered where it lives (``Backend.gather``),
    never on the host.

    Whole (the default): the evaluations A·w, B·w, C·w are made together,
    and a backend whose ``fork`` gives a branch (the CUDA backend's) runs the
    L, A and B MSMs on it beside H's steps, within ``fork_share`` bytes (None: the
    backend's default; 0: no branch, they follow H's MSM). ``lean``: the
    proof of :func:`prove_many` (the H step within two domain vectors, the
    MSMs in chunks), for devices whose memory a whole proof does not fit; its
    L, A and B MSMs run on a branch beside H's MSM when ``fork_share`` (the
    branch's part of the MSMs' room) is given and above 0.
    """
    if lean:
        rs = None if r is None else [r]
        ss = None if s is None else [s]
        share = fork_share or 0
        return prove_many(key, r1cs, [assignment], rs, ss, times, fork_share=share)[0]
    be, times = _start(key, r1cs, assignment, times)
    r = secrets.randbelow(R) if r is None else r % R
    s = secrets.randbelow(R) if s is None else s % R

    g1_before = times.total(_G1_STEPS)  # a StageTimes may gather several proofs
    t = time.perf_counter()
    w = be.asarray(assignment)
    t0 = t = times.mark("upload", t, detail=True)
    evaluations = [be.spmv(m, w) for m in key.spmv_operands(r1cs)]
    t = times.mark("spmv", t0)

    def side(w: Any) -> tuple:
        """The MSMs of the assignment's own queries (L, A, B in G1 and G2)."""
        t = time.perf_counter()
        a_index, b_index = _indexes(key)
        a_scalars = be.gather(w, a_index)
        b_scalars = be.gather(w, b_index)
        t = times.mark("gather", t, detail=True)
        g_l = be.msm_g1(key.l, w[key.num_inputs :], times.msm("l"))
        t = times.mark("msm_l", t, detail=True)
        g_a = be.msm_g1(key.a, a_scalars, times.msm("a"))
        del a_scalars
        t = times.mark("msm_a", t, detail=True)
        g_b1 = be.msm_g1(key.b_g1, b_scalars, times.msm("b_g1"))
        t = times.mark("msm_b_g1", t, detail=True)
        g_b2 = be.msm_g2(key.b_g2, b_scalars, times.msm("b_g2"))
        times.mark("msm_g2", t)
        return g_l, g_a, g_b1, g_b2

    # With a backend that can fork, the side MSMs run beside H's (its own
    # stream and thread), after the evaluations; else after H's MSM, in turn.
    branch = None
    if fork_share != 0:
        branch = be.fork(_domain_size(len(evaluations[0])), len(w), fork_share)
    if branch is not None:
        branch.start(functools.partial(side, w))
    try:
        h = key.reduction.h(be, *evaluations)
        del evaluations
        t = times.mark(key.reduction.step, t)
        g_h = be.msm_g1(key.h, h, times.msm("h"))
        del h
        t = times.mark("msm_h", t, detail=True)
    finally:
        if branch is not None:
            t_join = time.perf_counter()
            side_points = branch.join()
            times.detail["side_wait"] = time.perf_counter() - t_join
    if branch is None:
        side_points = side(w)
    del w
    g_l, g_a, g_b1, g_b2 = side_points
    g1 = times.total(_G1_STEPS) - g1_before
    times.seconds["msm_g1"] = times.seconds.get("msm_g1", 0.0) + g1
    t = time.perf_counter()
    proof = _assemble(key.vk, r, s, g_h, g_l, g_a, g_b1, g_b2)
    times.mark("assemble", t)
    return proof


def prove_many(
    key: PreparedKey,
    r1cs: R1CS | None,
    assignments: Sequence[Any],
    r: Sequence[int] | None = None,
    s: Sequence[int] | None = None,
    times: StageTimes | None = None,
    fork_share: int = 0,
) -> list[Proof]:
    """Lean proofs of several assignments of one circuit, their MSMs sharing
    each pass over the bases.

    Each assignment's H step runs within two domain vectors: its evaluations
    A·w, B·w, C·w are made one at a time, zero-padded to the domain, when the
    backend's ``h_poly`` asks for them (they are thunks), and transformed in
    place. Then each query's MSM runs once over its bases for every
    assignment's scalars (``Backend.msm_g1_many``): where the bases stream
    from pinned host memory, each chunk crosses PCIe once for them all. The a
    and b queries' scalars are :class:`~cuzk.backends.base.Gathered` sets:
    the backend gathers them a chunk at a time inside a pass over streamed
    bases (whole only beside resident ones), so no gathered vector of a
    whole query lives beside the assignment.

    ``fork_share`` > 0, with a backend whose ``fork`` gives a branch: the L,
    A and B MSMs run on the branch, within that many bytes of the MSMs'
    room, beside H's MSM (which sizes itself within the rest): H's MSM is
    bound by its arithmetic, theirs by their bases' copy, so they overlap.
    0: they follow H's MSM in turn. ``r`` and ``s`` (one pair a proof)
    default to random.

    Where a proof's partitions share the side queries' passes without
    holding their assignments at once (compact sets), see
    :mod:`cuzk.groth16.deferred`.
    """
    k = len(assignments)
    if not k:
        return []
    be, times = _start(key, r1cs, assignments[0], times)
    for a in assignments[1:]:
        _check(key, r1cs, a)
    rs, ss = _randomness(k, r, s)
    g1_before = times.total(_G1_STEPS)
    matrices = key.spmv_operands(r1cs)
    lazy = key.reduction is BELLPERSON  # (only bellperson's H takes its inputs lazily)
    m = len(key.h) + 1  # its H query: m − 1 points for the domain of m
    ws, hs = [], []
    for assignment in assignments:
        t = time.perf_counter()
        w = be.asarray(assignment)
        t = times.mark("upload", t, detail=True)
        if lazy:
            inputs = [functools.partial(be.spmv, mat, w, m) for mat in matrices]
        else:
            inputs = [be.spmv(mat, w) for mat in matrices]
        hs.append(key.reduction.h(be, *inputs))
        del inputs
        times.mark(key.reduction.step, t)
        ws.append(w)

    def side(ws: list) -> tuple[list, list, list, list]:
        """The MSMs of the assignments' own queries (L, A, B in G1 and G2)."""
        g_l = _side_msm(be, key, "l", [w[key.num_inputs :] for w in ws], times)
        a_index, b_index = _indexes(key)
        g_a = _side_msm(be, key, "a", [Gathered(w, a_index) for w in ws], times)
        b_sets = [Gathered(w, b_index) for w in ws]
        g_b1 = _side_msm(be, key, "b_g1", b_sets, times)
        g_b2 = _side_msm(be, key, "b_g2", b_sets, times)
        return g_l, g_a, g_b1, g_b2

    branch = None
    if fork_share > 0:
        branch = be.fork(m, len(ws[0]), fork_share)
    if branch is not None:
        branch.start(functools.partial(side, ws))
    try:
        t = time.perf_counter()
        g_h = be.msm_g1_many(key.h, hs, times.msm("h"))
        del hs
        times.mark("msm_h", t, detail=True)
    finally:
        if branch is not None:
            t_join = time.perf_counter()
            side_points = branch.join()
            times.detail["side_wait"] = time.perf_counter() - t_join
    if branch is None:
        side_points = side(ws)
    del ws
    g_l, g_a, g_b1, g_b2 = side_points
    g1 = times.total(_G1_STEPS) - g1_before
    times.seconds["msm_g1"] = times.seconds.get("msm_g1", 0.0) + g1
    t = time.perf_counter()
    proofs = [
        _assemble(key.vk, rs[j], ss[j], g_h[j], g_l[j], g_a[j], g_b1[j], g_b2[j]) for j in range(k)
    ]
    times.mark("assemble", t)
    return proofs


def _randomness(k: int, r: Sequence[int] | None, s: Sequence[int] | None) -> tuple[list, list]:
    """One (r, s) a proof: as given (reduced), else random."""
    rs = [secrets.randbelow(R) for _ in range(k)] if r is None else [x % R for x in r]
    ss = [secrets.randbelow(R) for _ in range(k)] if s is None else [x % R for x in s]
    if len(rs) != k or len(ss) != k:
        raise ValueError(f"prove_many: {k} assignments, {len(rs)} r and {len(ss)} s")
    return rs, ss


# Each side query's stage mark (msm_g2 is a stage of its own, the rest msm_g1's steps).
_SIDE_MARK = {"l": "msm_l", "a": "msm_a", "b_g1": "msm_b_g1", "b_g2": "msm_g2"}


def _side_msm(be: Backend, key: PreparedKey, q: str, scalar_sets: list, times: StageTimes):
    """One pass of query q's MSM over its bases for the scalar sets."""
    t = time.perf_counter()
    many = be.msm_g2_many if q == "b_g2" else be.msm_g1_many
    out = many(getattr(key, q), scalar_sets, times.msm(q))
    times.mark(_SIDE_MARK[q], t, detail=q != "b_g2")
    return out


def _check(key: PreparedKey, r1cs: R1CS | None, assignment: Any) -> None:
    """The assignment's length against the circuit's, and matrices to evaluate it on."""
    n = r1cs.num_variables if r1cs is not None else key.num_variables
    if n and tuple(assignment.shape) != (n, 4):
        raise InputError("witness", "length", f"{len(assignment)} values, the circuit has {n}")
    if r1cs is None and not key.matrices:
        raise ValueError("prove: no R1CS given and the key holds no matrices")


def _start(
    key: PreparedKey, r1cs: R1CS | None, assignment: Any, times: StageTimes | None
) -> tuple[Backend, StageTimes]:
    """The backend and the stage timer (waiting for the backend), the assignment checked."""
    _check(key, r1cs, assignment)
    be = key.backend
    times = times if times is not None else StageTimes()
    times.sync = be.synchronize
    return be, times


def _indexes(key: PreparedKey) -> tuple[Any, Any]:
    """The a and b selections where the backend gathers (prepared with the key, or now)."""
    be = key.backend
    a_index = key.a_index if key.a_index is not None else be.prepare_index(key.a_select)
    b_index = key.b_index if key.b_index is not None else be.prepare_index(key.b_select)
    return a_index, b_index


def _assemble(vk: VerifyingKey, r: int, s: int, g_h, g_l, g_a, g_b1, g_b2) -> Proof:
    rs, ss, rss = pairing.scalar(r), pairing.scalar(s), pairing.scalar(r * s % R)
    to1, to2 = pairing.g1_to_ark, pairing.g2_to_ark
    alpha, beta1, delta1 = to1(vk.alpha_g1), to1(vk.beta_g1), to1(vk.delta_g1)
    sum_a, sum_b1 = to1(g_a), to1(g_b1)
    proof_a = alpha + delta1 * rs + sum_a
    proof_b = to2(vk.beta_g2) + to2(vk.delta_g2) * ss + to2(g_b2)
    proof_c = (
        sum_a * ss + sum_b1 * rs + delta1 * rss + alpha * ss + beta1 * rs + to1(g_h) + to1(g_l)
    )
    return Proof(
        a=pairing.g1_from_ark(proof_a),
        b=pairing.g2_from_ark(proof_b),
        c=pairing.g1_from_ark(proof_c),
    )
