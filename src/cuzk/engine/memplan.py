"""Memory plan: what a circuit needs of a machine, from its counts alone.

The engine's budgets reserve, per circuit, a proving key (on the device that
proves, or in host memory for the CPU backend), one working set per
partition in flight (host and device), and, once, the development key's
generation; the daemon also keeps the circuit's R1CS matrices in host memory.
:func:`plan` computes each of these from a compiled circuit's counts with
the same models the engine reserves by (nothing is built, so a 32GiB PoRep
plan needs no 30 GiB of matrices), and says whether the key and one
partition fit a given GPU and host, and how many partitions fit at once.

The key's point counts are exact (its a and b queries from the compiled
templates, :meth:`~cuzk.synthesis.compile.CompiledCircuit.query_sizes`); the
device matrices, the working sets and the development key's generation are
counted by the models the engine reserves by.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cuzk.backends import memory_model
from cuzk.backends.base import compact_bytes
from cuzk.engine.keystore.devfiles import dev_setup_host_bytes
from cuzk.engine.keystore.residency import WITNESS_ALLOWANCE, Residency
from cuzk.engine.keystore.residency import plan as plan_residency
from cuzk.engine.kinds.base import (
    HINTS_BYTES,
    SYNTHESIS_BYTES_PER_VARIABLE,
    domain_size,
    key_host_bytes_for,
    key_raw_bytes,
)
from cuzk.r1cs.counts import Counts


def shape_of(cc) -> Counts:
    """The counts of a :class:`cuzk.synthesis.compile.CompiledCircuit`."""
    return cc.counts()


@dataclass(frozen=True)
class Plan:
    circuit_id: str
    backend: str
    constraints: int
    variables: int
    fft_domain: int
    r1cs_host_bytes: int  # the matrices as the daemon holds them (host CSR)
    key_file_bytes: int  # the key's points, raw (its cache files)
    key_generation_host_bytes: int  # reserved while a development key is made
    key_device_bytes: int  # the key's resident parts on a GPU (0 for the CPU backend)
    key_host_bytes: int  # the prepared key in host memory (CPU backend), 0 on a GPU
    key_pinned_bytes: int  # the key's streamed parts in pinned host memory (GPU tiers)
    partition_host_bytes: int  # one partition in flight, host
    device_witness: bool  # the assignment is made on the GPU (host: the hint table)
    partition_device_bytes: int  # one partition in flight, device (0 for the CPU)
    gpu_budget_bytes: int
    host_budget_bytes: int
    fits_gpu: bool
    fits_host: bool
    partitions_at_once_gpu: int
    partitions_at_once_host: int
    tier: str = ""  # the GPU residency tier (keystore.residency): resident, mixed, streamed
    lean: bool = False  # lean partitions (the H step in two vectors, chunked MSMs)
    streamed_parts: tuple[str, ...] = ()  # what crosses PCIe from pinned host memory
    pcie_bytes_per_partition: int = 0  # key bytes a partition moves across PCIe
    msm_room_bytes: int = 0  # what a lean partition's MSMs work in (chunks, window groups)
    # the side branch's part of it (L, A and B beside H's MSM; 0: in turn after it)
    side_room_bytes: int = 0
    host_needed_bytes: int = 0  # pinned key + partitions in flight on the host
    partitions_per_proof: int = 1
    # the side queries whose bases stream (lean tiers): their scalars wait as
    # compact sets in host memory for one pass a proof
    shared_queries: tuple[str, ...] = ()
    compact_host_bytes: int = 0  # one partition's compact sets, held until that pass
    pcie_bytes_per_proof: int = 0  # key bytes a proof moves, the shared passes once
    pcie_bytes_per_proof_unshared: int = 0  # … each partition's passes its own

    def as_dict(self) -> dict:
        return asdict(self)


# The share of full scalars (neither 0 nor 1) in each side query's set.
# Measured on really sealed PoRep partitions (2026-12-04): 2KiB L 1.6 %,
# A 1.2 %, B 4.6 % full; 8MiB 2.9, 2.2 and 8.0 % (about 46 % ones in each).
# The share grows with the trees' depth (6 levels at 2KiB, 18 at 8MiB, 30 at
# 32GiB): these are the 8MiB shares carried on to 32GiB's depth, a bound
# until a 32GiB partition is measured. PoSt and SnapDeals (Poseidon-heavy):
# unmeasured; the engine reserves a deferred partition's sets by their size.
COMPACT_FULL_SHARE = {"l": 0.05, "a": 0.04, "b": 0.12}


def compact_partition_bytes(shape: Counts, queries: tuple[str, ...]) -> int:
    """Host bytes a partition's compact sets of ``queries`` take (B's one set
    for both B queries): bitmaps and full values at :data:`COMPACT_FULL_SHARE`."""
    sizes = {"l": shape.num_aux, "a": shape.a_points, "b": shape.b_points}
    sets = {"b" if q.startswith("b_") else q for q in queries}
    return sum(
        compact_bytes(sizes[q], int(sizes[q] * COMPACT_FULL_SHARE[q]) + 1) for q in sorted(sets)
    )


def host_csr_bytes(rows: int, nnz: int) -> int:
    """A host CSR matrix: int64 row pointers and columns, 32-byte coefficients."""
    return 8 * (rows + 1) + 40 * nnz


def residency(shape: Counts, gpu_budget: int, witness: str = "auto", group: int = 1) -> Residency:
    """The GPU residency of a circuit on a budget (the CUDA backend's model);
    ``group``: the partitions a pass over streamed L, A and B bases serves
    (``[gpus] shared_pass_partitions``; 1: off)."""
    extra = WITNESS_ALLOWANCE if witness in ("auto", "device") else 0
    return plan_residency(shape, gpu_budget, memory_model("cuda"), extra, group)


def plan(
    shape: Counts,
    backend: str,
    host_budget: int,
    gpu_budget: int = 0,
    witness: str = "auto",
    partitions: int = 1,
    shared_pass_partitions: int = 0,
) -> Plan:
    """The plan of one circuit on ``backend`` ("cuda" or "cpu") within the budgets
    (bytes: the host's ``[memory] total_budget``, and a GPU's VRAM budget:
    ``[gpus] vram_budget``, or its memory times ``vram_budget_fraction``);
    ``witness`` is ``[pipeline] witness`` (on CUDA a partition then holds its
    hint table on the host, not its assignment: every Filecoin circuit has a
    device witness). On CUDA the key's residency tier comes from
    :func:`cuzk.engine.keystore.residency.plan`: what stays in VRAM, what
    streams from pinned host memory, whole or lean partitions; a proof of
    several ``partitions`` ranks the resident parts with its passes over L, A
    and B shared as ``shared_pass_partitions`` says (``[gpus]``; 1: off)."""
    if backend not in ("cuda", "cpu"):
        raise ValueError(f"backend {backend!r}: expected cuda or cpu")
    nc, nv, aux = shape.num_constraints, shape.num_variables, shape.num_aux
    rows = nc
    r1cs_host = sum(host_csr_bytes(rows, z) for z in shape.nnz)
    synthesis = SYNTHESIS_BYTES_PER_VARIABLE * nv
    raw = key_raw_bytes(nc, aux, shape.a_points, shape.b_points)
    res = None
    pinned = 0
    group = shared_pass_partitions if partitions > 1 else 1
    if backend == "cuda":
        res = residency(shape, gpu_budget, witness, group)
        key_dev = res.key_device_bytes
        part_dev = res.partition_device_bytes
        pinned = res.key_pinned_bytes
        part_host = (
            HINTS_BYTES
            if witness in ("auto", "device")
            else max(synthesis, memory_model("cuda").prove_host_bytes(nc, nv))
        )
        key_gen = dev_setup_host_bytes(nc)
        key_host = 0
        fits_gpu = res.fits
        at_once_gpu = res.in_flight
    else:
        key_dev = part_dev = 0
        model = memory_model("cpu")
        part_host = max(synthesis, model.prove_host_bytes(nc, nv))
        key_host = key_host_bytes_for(nc, nv, aux)
        key_gen = dev_setup_host_bytes(nc)
        fits_gpu, at_once_gpu = True, 0
    # the daemon's host: a streaming tier's pinned key, then the partitions in
    # flight (the R1CS is mapped from its cache and released once on a GPU)
    shared = res.shared_queries if res is not None and res.fits and group != 1 else ()
    compact = compact_partition_bytes(shape, shared) if shared else 0
    # a proof's compact sets wait on the host for its shared passes
    resident_host = (r1cs_host if backend == "cpu" else 0) + key_host + pinned
    resident_host += max(1, partitions) * compact
    fits_host = resident_host + max(part_host, key_gen) <= host_budget
    at_once_host = max(0, (host_budget - resident_host) // part_host) if fits_host else 0
    return Plan(
        circuit_id=shape.circuit_id,
        backend=backend,
        constraints=nc,
        variables=nv,
        fft_domain=domain_size(nc),
        r1cs_host_bytes=r1cs_host,
        key_file_bytes=raw,
        key_generation_host_bytes=key_gen,
        key_device_bytes=key_dev,
        key_host_bytes=key_host,
        key_pinned_bytes=pinned,
        partition_host_bytes=part_host,
        device_witness=backend == "cuda" and witness in ("auto", "device"),
        partition_device_bytes=part_dev,
        gpu_budget_bytes=gpu_budget,
        host_budget_bytes=host_budget,
        fits_gpu=fits_gpu,
        fits_host=fits_host,
        partitions_at_once_gpu=int(at_once_gpu),
        partitions_at_once_host=int(at_once_host),
        tier=res.tier if res is not None else "",
        lean=bool(res and res.lean),
        streamed_parts=res.streamed_parts if res is not None else (),
        pcie_bytes_per_partition=res.pcie_bytes_per_partition() if res is not None else 0,
        msm_room_bytes=res.msm_room if res is not None else 0,
        side_room_bytes=res.fork_share if res is not None and res.lean else 0,
        host_needed_bytes=pinned
        + max(1, at_once_gpu or 1) * part_host
        + max(1, partitions) * compact,
        partitions_per_proof=max(1, partitions),
        shared_queries=shared,
        compact_host_bytes=compact,
        pcie_bytes_per_proof=(
            res.pcie_bytes_per_proof(partitions, shared=bool(shared)) if res is not None else 0
        ),
        pcie_bytes_per_proof_unshared=(
            res.pcie_bytes_per_proof(partitions, shared=False) if res is not None else 0
        ),
    )


def gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _names(queries: tuple[str, ...]) -> str:
    """L, A, B_G1, B_G2 as a short list (B's two queries as B)."""
    names = [q.upper() for q in queries if q not in ("b_g1", "b_g2")]
    if {"b_g1", "b_g2"} & set(queries):
        names.append(
            "B"
            if {"b_g1", "b_g2"} <= set(queries)
            else next(q.upper() for q in queries if q.startswith("b_"))
        )
    return ", ".join(names)


def _split(p: Plan) -> str:
    """How a lean partition's MSM room is shared: H's pass and the side branch's."""
    if not p.side_room_bytes:
        return ": H, then L, A and B in turn"
    h = p.msm_room_bytes - p.side_room_bytes
    return f": H's pass {gib(h)}, L, A and B beside it {gib(p.side_room_bytes)}"


def render(p: Plan) -> str:
    """The plan as a short text report."""
    lines = [
        f"circuit            {p.circuit_id} on {p.backend}: {p.constraints:,} constraints, "
        f"{p.variables:,} variables, domain 2^{p.fft_domain.bit_length() - 1}",
        (
            f"host, resident     R1CS {gib(p.r1cs_host_bytes)}"
            + (f" + prepared key {gib(p.key_host_bytes)}" if p.key_host_bytes else "")
            if p.backend == "cpu"
            else f"host, pinned key   {gib(p.key_pinned_bytes)} (the key's parts that stream)"
        ),
        f"host, per partition {gib(p.partition_host_bytes)}"
        + (" (its hint table: the witness is made on the GPU)" if p.device_witness else "")
        + (
            f" + compact {_names(p.shared_queries)} {gib(p.compact_host_bytes)} "
            f"(held until the proof's shared passes: "
            f"{gib(p.partitions_per_proof * p.compact_host_bytes)} for "
            f"{p.partitions_per_proof} partitions)"
            if p.compact_host_bytes
            else ""
        ),
        f"host, key generation {gib(p.key_generation_host_bytes)} (once; key files "
        f"{gib(p.key_file_bytes)})",
    ]
    if p.backend == "cuda":
        streamed = ", ".join(p.streamed_parts) or "nothing"
        lines += [
            f"GPU tier           {p.tier or 'none'}"
            + (" (lean partitions)" if p.lean else " (whole partitions)")
            + f"; streamed: {streamed}",
            f"GPU, key           {gib(p.key_device_bytes)}",
            f"GPU, per partition {gib(p.partition_device_bytes)}"
            + (f" (its MSMs' room {gib(p.msm_room_bytes)}{_split(p)})" if p.lean else ""),
            f"PCIe, per partition {gib(p.pcie_bytes_per_partition)} of the key"
            + (
                f"; per proof ({p.partitions_per_proof} partitions) "
                f"{gib(p.pcie_bytes_per_proof)}"
                + (
                    f", {_names(p.shared_queries)} once (not shared: "
                    f"{gib(p.pcie_bytes_per_proof_unshared)})"
                    if p.shared_queries
                    else ""
                )
                if p.pcie_bytes_per_proof and p.partitions_per_proof > 1
                else ""
            ),
            f"GPU budget         {gib(p.gpu_budget_bytes)}: "
            + (
                f"fits, {p.partitions_at_once_gpu} partition(s) at once"
                if p.fits_gpu
                else "does NOT fit the key and one partition"
            ),
        ]
    lines.append(
        f"host budget        {gib(p.host_budget_bytes)}: "
        + (
            f"fits, {p.partitions_at_once_host} partition(s) in flight"
            if p.fits_host
            else "does NOT fit the resident data and one partition"
        )
    )
    return "\n".join(lines)
