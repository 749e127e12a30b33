"""Proofs whose L, A and B MSMs wait for a pass shared with other proofs'.

Where a key's L, A and B bases stream from pinned host memory and one lean
working set is all the device holds, a pass over dense scalars serves one
partition and the bases cross PCIe once a partition. Here a proof is made in
two parts: :func:`prove_deferred` does what needs the assignment (the H step
and H's MSM, the side queries not deferred, and the deferred queries'
scalars as :class:`~cuzk.backends.base.Compact` sets in host memory: zeros,
ones and the full values, a tenth of the dense set), after which the
assignment may go; :func:`finish_deferred` (or :class:`Finishing`, a pass at
a time) runs each deferred query's MSM once over its bases for every part's
set, then assembles the proofs. :func:`prove_compact` is the two in turn
(docs/device-notes/tiers.md, "Partitions sharing the passes over L, A and B").
"""

from __future__ import annotations

import functools
import secrets
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.algebra.fields import R
from cuzk.backends.base import Gathered
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import (
    _G1_STEPS,
    BELLPERSON,
    SIDE_QUERIES,
    PreparedKey,
    StageTimes,
    _assemble,
    _check,
    _indexes,
    _randomness,
    _side_msm,
    _start,
)
from cuzk.r1cs.system import R1CS


def prove_compact(
    key: PreparedKey,
    r1cs: R1CS | None,
    assignments: Sequence[Any],
    r: Sequence[int] | None,
    s: Sequence[int] | None,
    times: StageTimes | None,
    compact: Collection[str],
) -> list[Proof]:
    """:func:`~cuzk.groth16.prover.prove_many`'s proofs with the ``compact``
    queries' MSMs deferred to one pass each over compact sets, one
    assignment on the backend at a time (:func:`prove_deferred` each, then
    :func:`finish_deferred`)."""
    k = len(assignments)
    if not k:
        return []
    for a in assignments:
        _check(key, r1cs, a)
    rs, ss = _randomness(k, r, s)
    times = times if times is not None else StageTimes()
    waiting = [
        prove_deferred(key, r1cs, a, compact, rs[j], ss[j], times)
        for j, a in enumerate(assignments)
    ]
    return finish_deferred(key, waiting, times)


@dataclass
class Deferred:
    """A proof whose compact side queries wait for a pass shared with other
    proofs' (:func:`prove_deferred`, :func:`finish_deferred`): its H and
    other side queries' sums, and the compact queries' scalar sets in host
    memory (a tenth of the dense sets: the assignment itself is gone)."""

    r: int
    s: int
    points: dict[str, Any]  # the sums made: "h" and the side queries not compact
    sets: dict[str, Any]  # the compact queries' Compact sets (B's one set for both)

    @property
    def host_bytes(self) -> int:
        """Host bytes its compact sets hold."""
        seen = {id(c): c for c in self.sets.values()}
        return sum(c.nbytes for c in seen.values())


def prove_deferred(
    key: PreparedKey,
    r1cs: R1CS | None,
    assignment: Any,
    compact: Collection[str],
    r: int | None = None,
    s: int | None = None,
    times: StageTimes | None = None,
    beside: Callable[[Callable[[], bool]], Any] | None = None,
    fork_share: int = 0,
) -> Deferred:
    """A proof's part that needs its assignment: the H step and H's MSM, the
    side queries not in ``compact`` (:data:`SIDE_QUERIES`), and the compact
    queries' scalars as :class:`~cuzk.backends.base.Compact` sets
    (``Backend.compact``; B's made once for both B queries). The assignment
    may be freed once it returns; :func:`finish_deferred` completes the
    proof, its compact queries' MSMs in passes shared with others'.

    ``beside`` (with ``fork_share`` > 0, on a backend whose ``fork`` gives a
    branch): other work (the engine's: an earlier group's passes,
    :class:`Finishing`) started on a side branch after the H step and the
    compact sets, within ``fork_share`` bytes of the MSM room, beside H's
    MSM in the rest, and joined before this returns (or raises: the branch
    is joined on every path; what ``beside`` raises is raised here). It is
    called with ``ending``, true once H's MSM is done (work in steps stops
    at its next step then: the join waits for it). Not called where the
    backend gives no branch (the caller runs it in turn)."""
    compact = frozenset(compact)
    unknown = compact - set(SIDE_QUERIES)
    if unknown:
        raise ValueError(f"prove_deferred: compact takes {SIDE_QUERIES}, not {sorted(unknown)}")
    be, times = _start(key, r1cs, assignment, times)
    r = secrets.randbelow(R) if r is None else r % R
    s = secrets.randbelow(R) if s is None else s % R
    g1_before = times.total(_G1_STEPS)
    m = len(key.h) + 1
    a_index, b_index = _indexes(key)
    t = time.perf_counter()
    w = be.asarray(assignment)
    t = times.mark("upload", t, detail=True)
    matrices = key.spmv_operands(r1cs)
    if key.reduction is BELLPERSON:
        inputs = [functools.partial(be.spmv, mat, w, m) for mat in matrices]
    else:
        inputs = [be.spmv(mat, w) for mat in matrices]
    h = key.reduction.h(be, *inputs)
    del inputs
    times.mark(key.reduction.step, t)
    sets: dict[str, Any] = {}
    t = time.perf_counter()
    for q in SIDE_QUERIES:
        if q not in compact:
            continue
        twin = "b_g2" if q == "b_g1" else "b_g1" if q == "b_g2" else None
        if twin in sets:
            sets[q] = sets[twin]
        elif q == "l":
            sets[q] = be.compact(w, None, key.num_inputs)
        else:
            sets[q] = be.compact(w, a_index if q == "a" else b_index)
    if sets:
        times.mark("compact", t, detail=True)
    branch = None
    h_done = threading.Event()
    if beside is not None and fork_share > 0:
        branch = be.fork(m, len(w), fork_share)
        if branch is not None:
            branch.start(functools.partial(beside, h_done.is_set))
    try:
        t = time.perf_counter()
        points = {"h": be.msm_g1_many(key.h, [h], times.msm("h"))[0]}
        del h
        times.mark("msm_h", t, detail=True)
    finally:
        h_done.set()
        if branch is not None:
            t_join = time.perf_counter()
            branch.join()
            times.detail["beside_wait"] = time.perf_counter() - t_join
    for q in SIDE_QUERIES:  # the rest while the assignment lives
        if q not in compact:
            selection = {"l": None, "a": a_index}.get(q, b_index)
            one = w[key.num_inputs :] if selection is None else Gathered(w, selection)
            points[q] = _side_msm(be, key, q, [one], times)[0]
    del w
    g1 = times.total(_G1_STEPS) - g1_before
    times.seconds["msm_g1"] = times.seconds.get("msm_g1", 0.0) + g1
    return Deferred(r, s, points, sets)


def finish_deferred(
    key: PreparedKey, waiting: Sequence[Deferred], times: StageTimes | None = None
) -> list[Proof]:
    """The proofs of :func:`prove_deferred`'s parts: each compact query's MSM
    in one pass over its bases for every part's set (where they stream, each
    chunk crosses PCIe once for all of them), then each proof assembled."""
    if not waiting:
        return []
    passes = Finishing(waiting, times)
    while not passes.done:
        passes.step(key)
    return passes.proofs(key)


class Finishing:
    """:func:`finish_deferred` a pass at a time: :meth:`step` runs the next
    compact query's pass for every part's set (under any loaded key of the
    circuit: the sums do not depend on which), :meth:`proofs` assembles them
    once :attr:`done`. A caller may run the steps on several lines in turn
    (the engine: beside later partitions' H MSMs, a step at a time)."""

    def __init__(self, waiting: Sequence[Deferred], times: StageTimes | None = None) -> None:
        self.waiting = list(waiting)
        self.times = times if times is not None else StageTimes()
        self.points = [dict(d.points) for d in self.waiting]
        self.left = [q for q in SIDE_QUERIES if any(q in d.sets for d in self.waiting)]

    @property
    def done(self) -> bool:
        return not self.left

    def step(self, key: PreparedKey) -> None:
        """The next compact query's pass."""
        be, times = key.backend, self.times
        times.sync = be.synchronize
        g1_before = times.total(_G1_STEPS)
        q = self.left[0]
        owners = [j for j, d in enumerate(self.waiting) if q in d.sets]
        got = _side_msm(be, key, q, [self.waiting[j].sets[q] for j in owners], times)
        for j, g in zip(owners, got, strict=True):
            self.points[j][q] = g
        self.left.pop(0)
        times.seconds["msm_g1"] = times.seconds.get("msm_g1", 0.0) + (
            times.total(_G1_STEPS) - g1_before
        )

    def proofs(self, key: PreparedKey) -> list[Proof]:
        """The parts' proofs, once every pass is done."""
        if self.left:
            raise ValueError(f"finish_deferred: the passes of {self.left} are still to run")
        missing = [j for j, p in enumerate(self.points) if len(p) != 1 + len(SIDE_QUERIES)]
        if missing:
            raise ValueError(f"finish_deferred: part {missing[0]} lacks a side query's sum")
        t = time.perf_counter()
        proofs = [
            _assemble(key.vk, d.r, d.s, p["h"], p["l"], p["a"], p["b_g1"], p["b_g2"])
            for d, p in zip(self.waiting, self.points, strict=True)
        ]
        self.times.mark("assemble", t)
        return proofs
