"""Residency: what of a key and of a partition lives on one GPU budget.

A key has eight parts a GPU uses: the bases of its five queries (h, l, a,
b_g1, b_g2) and the circuit's three matrices (A, B, C). Each part is either
*resident* (in VRAM for as long as the key is loaded) or *streamed* (in
pinned host memory, crossing PCIe each time a partition uses it). A
partition is proved *whole* (every vector of the H step at once, the L, A
and B MSMs on a side branch beside H's: the fastest, and the largest) or
*lean* (the H step within two domain vectors, the MSMs one at a time in
chunks: what fits a 16 GB card).

:func:`plan` picks, from the circuit's counts and the backend's memory model
(:class:`cuzk.backends.cuda.model.CudaMemoryModel`), the residency of one
circuit on one budget:

1. **resident**: every part resident and whole partitions (the side
   branch's share halved, then dropped, before giving up a part) — the
   H200's path, unchanged;
2. otherwise lean partitions and the resident set (every subset of the
   eight that fits is tried) beside which a lean partition's MSM room splits
   between H's MSM and a side branch running L, A and B beside it
   (:attr:`Residency.fork_share` of :attr:`Residency.msm_room`), then the one
   whose proofs move the fewest key bytes across PCIe
   (:meth:`Residency.ranking_traffic`): H's bases and the streamed matrices
   cross each partition, while the streamed L, A and B bases cross once a
   group of partitions sharing their passes (``group``: ``[gpus]
   shared_pass_partitions``), so keeping H and the matrices beats keeping
   as many bytes of L, A or B; with sharing off (``group`` 1) each streamed
   part costs its bytes once a partition. Ties go to the most bytes
   resident. **streamed** when no part stays, **mixed** otherwise.

Partitions in flight (:attr:`Residency.in_flight`) are how many lean working
sets fit beside the key at once: a pass over streamed bases serves every
partition in flight (:meth:`cuzk.groth16.prover.prove_many`), so the bases
cross PCIe once for them all. Beyond them, the side queries whose bases
stream (:attr:`Residency.shared_queries`) can wait as compact scalar sets in
host memory for one pass shared by a proof's partitions
(:func:`cuzk.groth16.deferred.prove_deferred`): their bases then cross once a
proof (:meth:`Residency.pcie_bytes_per_proof`).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Protocol

from cuzk.groth16.keys import QUERIES
from cuzk.groth16.prover import MATRICES, SIDE_QUERIES
from cuzk.r1cs.counts import Counts

# The static witness plan and one run of it on the device (measured: 56 MB and
# at most 24 MB of registers at 32GiB PoRep; docs/device-notes/witness.md).
WITNESS_ALLOWANCE = 256 << 20


class MemoryModel(Protocol):
    """What the planner asks of a backend's memory model (the CUDA backend's:
    :class:`cuzk.backends.cuda.model.CudaMemoryModel`)."""

    def base_bytes(self, query: str, points: int) -> int: ...
    def matrix_bytes(self, rows: int, nnz: int, distinct: int) -> int: ...
    def matrix_pinned_bytes(self, rows: int, nnz: int, distinct: int) -> int: ...
    def matrix_streaming_bytes(self, rows: int, nnz: int, distinct: int) -> int: ...
    def index_bytes(self, a_points: int, b_points: int) -> int: ...
    def key_load_bytes(self, rows: int, nnz: tuple[int, ...], points: int = ...) -> int: ...
    def partition_bytes(self, nc: int, nv: int, fork_share: int | None) -> int: ...
    def default_fork_share(self, nc: int, nv: int) -> int: ...
    def lean_partition_bytes(
        self,
        nc: int,
        nv: int,
        max_query: int,
        streamed_matrix: int = 0,
        msm_room: int = ...,
        gathered: int | None = None,
        fork: bool = False,
    ) -> int: ...
    def lean_fork_share(self, nc: int, max_query: int, msm_room: int) -> int: ...
    def lean_msm_room(self, nc: int, max_query: int) -> int: ...
    def lean_free_room(self, nc: int, max_query: int, streamed_matrix: int = 0) -> int: ...


@dataclass(frozen=True)
class Residency:
    """One circuit on one GPU budget (see the module docstring)."""

    budget: int
    tier: str  # "resident", "mixed" or "streamed"; "none" when nothing fits
    resident: frozenset[str]  # the parts kept in VRAM (QUERIES and MATRICES names)
    lean: bool  # lean partitions (else whole ones)
    # the side branch's share (0: no side branch): of a whole partition's
    # working set, or of a lean partition's MSM room (L, A and B beside H's MSM)
    fork_share: int
    key_device_bytes: int  # the key's resident parts, its dictionaries and selections
    key_load_bytes: int  # held only while the key loads (drawn from a partition's room)
    key_pinned_bytes: int  # its streamed parts in pinned host memory
    partition_device_bytes: int  # one partition's working set
    in_flight: int  # partitions whose working sets fit beside the key at once
    parts: dict[str, int] = field(default_factory=dict)  # every part's bytes, resident or pinned
    # what a lean partition's MSMs size their work to (its live vectors hold the
    # rest of its reservation): H's pass and, with a side branch, the branch's
    # fork_share of it; 0 for whole partitions
    msm_room: int = 0

    @property
    def h_room(self) -> int:
        """What a lean partition's H MSM sizes its pass to: the MSM room less
        the side branch's share while the branch runs beside it."""
        return self.msm_room - (self.fork_share if self.lean else 0)

    @property
    def fits(self) -> bool:
        return self.in_flight >= 1

    def placement(self) -> dict[str, bool]:
        """Each part's residency, as :func:`cuzk.groth16.prover.load` takes it."""
        return {p: p in self.resident for p in (*QUERIES, *MATRICES)}

    @property
    def streamed_parts(self) -> tuple[str, ...]:
        return tuple(p for p in (*QUERIES, *MATRICES) if p not in self.resident)

    def pcie_bytes_per_partition(self) -> int:
        """Key bytes a partition moves across PCIe: the streamed matrices each
        time, the streamed bases once per pass shared by the partitions in flight."""
        mats = sum(self.parts[p] for p in MATRICES if p not in self.resident)
        bases = sum(self.parts[p] for p in QUERIES if p not in self.resident)
        return mats + bases // max(1, self.in_flight)

    @property
    def shared_queries(self) -> tuple[str, ...]:
        """The side queries (L, A, B_G1, B_G2) whose bases stream on a lean
        tier: their scalars can wait as compact sets in host memory for one
        pass shared by a proof's partitions (:func:`cuzk.groth16.deferred.finish_deferred`)."""
        if not self.lean:
            return ()
        return tuple(q for q in SIDE_QUERIES if q not in self.resident)

    def pcie_bytes_per_proof(self, partitions: int, shared: bool = True) -> int:
        """Key bytes a proof of ``partitions`` partitions moves across PCIe: with
        ``shared``, the :attr:`shared_queries`' bases once for the proof and
        the rest each partition (H's bases and the streamed matrices); else
        :meth:`pcie_bytes_per_partition` each partition."""
        k = max(1, partitions)
        if not shared or not self.shared_queries:
            return k * self.pcie_bytes_per_partition()
        once = sum(self.parts[q] for q in self.shared_queries)
        return k * (self.pcie_bytes_per_partition() - once // max(1, self.in_flight)) + once

    def ranking_traffic(self, group: int = 1) -> tuple[int, int]:
        """The key bytes by which :func:`plan` ranks resident sets, a partition's
        worth: with a shared pass over the :attr:`shared_queries`' bases for
        every ``group`` partitions, (each partition's own streamed bytes + the
        shared bases' bytes / ``group``, 0); with ``group`` 0 (a proof's
        partitions, however many: the engine's default) (each partition's own
        bytes, the shared bases' bytes), compared in that order; with
        ``group`` 1 (sharing off) every streamed part's bytes, each partition.
        No credit for partitions in flight: the engine's GPU workers prove a
        partition each, every one with its own passes."""
        streamed = [p for p in (*QUERIES, *MATRICES) if p not in self.resident]
        shared = set(self.shared_queries) if group != 1 else set()
        own = sum(self.parts[p] for p in streamed if p not in shared)
        once = sum(self.parts[p] for p in shared)
        if group == 0:
            return own, once
        return own + -(-once // max(1, group)), 0

    def describe(self) -> str:
        if self.tier == "none":
            return "does NOT fit"
        streamed = ", ".join(self.streamed_parts) or "nothing"
        mode = "lean partitions" if self.lean else "whole partitions"
        if self.fork_share == 0:
            mode += " (no side branch)"
        elif self.lean:
            mode += " (L, A and B beside H's MSM)"
        return f"{self.tier}: {mode}; streamed from pinned host memory: {streamed}"


def part_bytes(c: Counts, model: MemoryModel) -> dict[str, int]:
    """Every part's bytes resident on the device."""
    out = {q: model.base_bytes(q, c.points(q)) for q in QUERIES}
    for name, nnz in zip(MATRICES, c.nnz, strict=True):
        out[name] = model.matrix_bytes(c.num_constraints, nnz, c.distinct_coefficients)
    return out


def plan(
    c: Counts,
    budget: int,
    model: MemoryModel,
    witness_bytes: int = WITNESS_ALLOWANCE,
    group: int = 1,
) -> Residency:
    """The residency of a circuit with counts ``c`` on a GPU budget of ``budget``
    bytes (see the module docstring); ``witness_bytes``: what a partition's
    witness holds on the device beside the assignment (its static plan and one
    run); ``group``: the partitions one pass over the streamed L, A and B
    bases serves (``[gpus] shared_pass_partitions``: 1 off, 0 a proof's
    partitions), by which the resident sets are ranked
    (:meth:`Residency.ranking_traffic`)."""
    if group < 0:
        raise ValueError(f"group {group}: expected 0 (a proof's partitions), 1 (off) or more")
    p = _Planner(c, budget, model, witness_bytes)
    default_share = model.default_fork_share(p.nc, p.nv)
    for share in (default_share, default_share // 2, 0):
        whole = model.partition_bytes(p.nc, p.nv, share) + witness_bytes
        got = p.residency(p.everything, False, share, whole)
        if got.fits:
            return got
    best: tuple[tuple, Residency] | None = None
    for got in p.lean_plans():
        # a side branch first (it hides L, A and B: ≈ 0.9 s a 32GiB partition),
        # then the least traffic (each GiB streamed costs ≈ 18 ms of copy; a
        # streamed H also its MSM's ≈ 0.6-0.8 s over a resident one), then the
        # most bytes resident
        own, once = got.ranking_traffic(group)
        rank = (got.fork_share > 0, -own, -once, sum(p.parts[q] for q in got.resident))
        if best is None or rank > best[0]:
            best = (rank, got)
    if best is None:
        lean = p.lean_bytes((), p.least, fork=False)
        return dataclasses.replace(p.residency((), True, 0, lean), msm_room=p.least)
    return best[1]


def lean_plans(
    c: Counts, budget: int, model: MemoryModel, witness_bytes: int = WITNESS_ALLOWANCE
) -> list[Residency]:
    """Every resident set's lean plan that fits ``budget`` (what :func:`plan`
    ranks where the whole, resident path does not fit)."""
    return list(_Planner(c, budget, model, witness_bytes).lean_plans())


class _Planner:
    """One circuit's parts on one budget: the plans :func:`plan` chooses from."""

    def __init__(self, c: Counts, budget: int, model: MemoryModel, witness_bytes: int) -> None:
        self.c, self.budget, self.model, self.witness_bytes = c, budget, model, witness_bytes
        nc = self.nc = c.num_constraints
        self.nv = c.num_variables
        self.parts = part_bytes(c, model)
        self.pinned = {
            name: model.matrix_pinned_bytes(nc, nnz, c.distinct_coefficients)
            for name, nnz in zip(MATRICES, c.nnz, strict=True)
        } | {q: self.parts[q] for q in QUERIES}
        self.index = model.index_bytes(c.a_points, c.b_points)
        self.load = model.key_load_bytes(nc, c.nnz, max(c.points(q) for q in QUERIES))
        self.everything = frozenset((*QUERIES, *MATRICES))
        self.max_query = max(c.a_points, c.b_points, c.num_aux)
        self.streaming = max(
            (model.matrix_streaming_bytes(nc, z, c.distinct_coefficients) for z in c.nnz),
            default=0,
        )
        self.least = model.lean_msm_room(nc, self.max_query)

    def residency(self, resident, lean, share, partition) -> Residency:
        parts, pinned = self.parts, self.pinned
        key = sum(parts[p] for p in resident) + self.index
        # a streamed matrix keeps its dictionary of coefficients on the device
        key += sum(parts[m] - pinned[m] for m in MATRICES if m not in resident)
        spare = self.budget - key
        # the load's temporaries come out of the room of the partitions to come
        in_flight = spare // partition if spare >= max(partition, self.load) else 0
        streamed = [p for p in (*QUERIES, *MATRICES) if p not in resident]
        tier = "resident" if not streamed else ("streamed" if not resident else "mixed")
        return Residency(
            budget=self.budget,
            tier=tier if in_flight else "none",
            resident=frozenset(resident),
            lean=lean,
            fork_share=share,
            key_device_bytes=key,
            key_load_bytes=self.load,
            key_pinned_bytes=sum(pinned[p] for p in streamed),
            partition_device_bytes=partition,
            in_flight=int(in_flight),
            parts={p: (parts[p] if p in resident else pinned[p]) for p in parts},
        )

    def lean_bytes(self, resident, room: int, fork: bool, gathered: int | None = None) -> int:
        """A lean partition's working set beside ``resident`` (``gathered``:
        a whole gather's bytes; None: the bound of any)."""
        streamed_matrix = self.streaming if any(m not in resident for m in MATRICES) else 0
        return (
            self.model.lean_partition_bytes(
                self.nc, self.nv, self.max_query, streamed_matrix, room, gathered, fork
            )
            + self.witness_bytes
        )

    def lean_plans(self):
        """Each resident set's lean plan that fits, the side branch where it fits."""
        c, model, nc, q = self.c, self.model, self.nc, self.max_query

        def share_of(room: int) -> int:
            return model.lean_fork_share(nc, q, room)

        names = (*QUERIES, *MATRICES)
        for mask in itertools.product((True, False), repeat=len(names)):
            resident = [n for n, keep in zip(names, mask, strict=True) if keep]
            streamed_matrix = self.streaming if any(m not in resident for m in MATRICES) else 0
            # the MSMs work in what the H step's peak leaves them, at least a chunk's pass
            room = max(self.least, model.lean_free_room(nc, q, streamed_matrix))
            # a query's scalars gathered whole: only beside its resident bases
            gathered = 32 * max(
                (c.a_points if "a" in resident else 0),
                (c.b_points if {"b_g1", "b_g2"} & set(resident) else 0),
            )
            # L, A and B beside H's MSM where the (grown) room splits, the gather
            # counted beside both passes; else in turn
            for fork in (True, False):
                lean = self.lean_bytes(resident, room, fork, gathered)
                got = dataclasses.replace(self.residency(resident, True, 0, lean), msm_room=room)
                if got.fits:
                    got = _grown(got, share_of if fork else None)
                    if got.fork_share or not fork:
                        break
            if got.fits:
                yield got


def _grown(r: Residency, share_of=None) -> Residency:
    """A lean plan whose budget has room left beside its key and partitions:
    half of what is left goes to each partition's MSM room (an MSM's chunks
    and window groups grow with it: BENCHMARKS.md "Residency tiers"), the
    other half stays unreserved for the device's own holds (NTT tables).
    ``share_of(room)``: the side branch's share of the room, where the plan
    runs L, A and B beside H's MSM (None: no branch)."""
    spare = r.budget - r.key_device_bytes - r.in_flight * r.partition_device_bytes
    extra = max(0, (spare // (2 * r.in_flight)) & ~((1 << 20) - 1))  # whole MiB
    room = r.msm_room + extra
    return dataclasses.replace(
        r,
        partition_device_bytes=r.partition_device_bytes + extra,
        msm_room=room,
        fork_share=share_of(room) if share_of is not None else 0,
    )
