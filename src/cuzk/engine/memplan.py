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
templates, :meth:`~cuzk.circuits.compile.CompiledCircuit.query_sizes`); the
device matrices, the working sets and the development key's generation are
counted by the models the engine reserves by.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.backend import CudaBackend
from cuzk.backends.cuda.msm import load_staging_bytes
from cuzk.backends.cuda.spmv import resident_bytes, upload_bytes
from cuzk.engine.keygen import dev_setup_host_bytes
from cuzk.engine.kinds.base import (
    HINTS_BYTES,
    SYNTHESIS_BYTES_PER_VARIABLE,
    domain_size,
    key_host_bytes_for,
    key_raw_bytes,
)


@dataclass(frozen=True)
class Shape:
    """The counts a plan needs (a compiled circuit's, see :func:`shape_of`)."""

    circuit_id: str
    num_constraints: int  # rows of A, B, C (input constraints included)
    num_inputs: int  # with ONE
    num_aux: int
    nnz: tuple[int, int, int]
    distinct_coefficients: int  # over all three matrices: a bound for each
    a_points: int  # the key's a query (CompiledCircuit.query_sizes)
    b_points: int  # its b_g1 and b_g2 queries

    @property
    def num_variables(self) -> int:
        return self.num_inputs + self.num_aux


def shape_of(cc) -> Shape:
    """The shape of a :class:`cuzk.circuits.compile.CompiledCircuit`."""
    a_points, b_points = cc.query_sizes()
    return Shape(
        cc.circuit_id,
        cc.num_constraints,
        cc.num_inputs,
        cc.num_aux,
        tuple(cc.nnz),
        max(1, len(cc.coefficients.values)),
        a_points,
        b_points,
    )


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
    key_device_bytes: int  # the prepared key on a GPU (0 for the CPU backend)
    key_host_bytes: int  # the prepared key in host memory (CPU backend), 0 on a GPU
    partition_host_bytes: int  # one partition in flight, host
    device_witness: bool  # the assignment is made on the GPU (host: the hint table)
    partition_device_bytes: int  # one partition in flight, device (0 for the CPU)
    gpu_budget_bytes: int
    host_budget_bytes: int
    fits_gpu: bool
    fits_host: bool
    partitions_at_once_gpu: int
    partitions_at_once_host: int

    def as_dict(self) -> dict:
        return asdict(self)


def _reserved_csr(rows: int, nnz: int, distinct: int) -> int:
    """A device matrix as the engine reserves it (CudaBackend.prepared_key_bytes):
    coded matrices at the 32-bit width with a 2^16-value dictionary allowance;
    the list of rows longer than 32 entries (8 bytes each) is not counted."""
    if distinct * 32 < nnz * 28:
        distinct = max(distinct, (1 << 16) + 1)
    return resident_bytes(rows, nnz, distinct)


def host_csr_bytes(rows: int, nnz: int) -> int:
    """A host CSR matrix: int64 row pointers and columns, 32-byte coefficients."""
    return 8 * (rows + 1) + 40 * nnz


def plan(
    shape: Shape,
    backend: str,
    host_budget: int,
    gpu_budget: int = 0,
    witness: str = "auto",
) -> Plan:
    """The plan of one circuit on ``backend`` ("cuda" or "cpu") within the budgets
    (bytes: the host's ``[memory] total_budget``, and a GPU's memory times
    ``[gpus] vram_budget_fraction``); ``witness`` is ``[pipeline] witness``
    (on CUDA a partition then holds its hint table on the host, not its
    assignment: every Filecoin circuit has a device witness)."""
    if backend not in ("cuda", "cpu"):
        raise ValueError(f"backend {backend!r}: expected cuda or cpu")
    nc, nv, aux = shape.num_constraints, shape.num_variables, shape.num_aux
    rows = nc
    r1cs_host = sum(host_csr_bytes(rows, z) for z in shape.nnz)
    synthesis = SYNTHESIS_BYTES_PER_VARIABLE * nv
    raw = key_raw_bytes(nc, aux, shape.a_points, shape.b_points)
    if backend == "cuda":
        key_dev = (
            raw
            + load_staging_bytes()
            + sum(_reserved_csr(rows, z, shape.distinct_coefficients) for z in shape.nnz)
            + max(upload_bytes(rows, z) for z in shape.nnz)
        )
        part_dev = CudaBackend.prove_device_bytes(nc, nv)
        if witness in ("auto", "device"):
            part_host = HINTS_BYTES
        else:
            part_host = max(synthesis, CudaBackend.prove_host_bytes(nc, nv))
        key_gen = dev_setup_host_bytes(nc)
        key_host = 0
        fits_gpu = key_dev + part_dev <= gpu_budget
        at_once_gpu = max(0, (gpu_budget - key_dev) // part_dev) if fits_gpu else 0
    else:
        key_dev = part_dev = 0
        part_host = max(synthesis, CpuBackend.prove_host_bytes(nc, nv))
        key_host = key_host_bytes_for(nc, nv, aux)
        key_gen = dev_setup_host_bytes(nc)
        fits_gpu, at_once_gpu = True, 0
    resident_host = r1cs_host + key_host
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
        partition_host_bytes=part_host,
        device_witness=backend == "cuda" and witness in ("auto", "device"),
        partition_device_bytes=part_dev,
        gpu_budget_bytes=gpu_budget,
        host_budget_bytes=host_budget,
        fits_gpu=fits_gpu,
        fits_host=fits_host,
        partitions_at_once_gpu=int(at_once_gpu),
        partitions_at_once_host=int(at_once_host),
    )


def gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def render(p: Plan) -> str:
    """The plan as a short text report."""
    lines = [
        f"circuit            {p.circuit_id} on {p.backend}: {p.constraints:,} constraints, "
        f"{p.variables:,} variables, domain 2^{p.fft_domain.bit_length() - 1}",
        f"host, resident     R1CS {gib(p.r1cs_host_bytes)}"
        + (f" + prepared key {gib(p.key_host_bytes)}" if p.key_host_bytes else ""),
        f"host, per partition {gib(p.partition_host_bytes)}"
        + (" (its hint table: the witness is made on the GPU)" if p.device_witness else ""),
        f"host, key generation {gib(p.key_generation_host_bytes)} (once; key files "
        f"{gib(p.key_file_bytes)})",
    ]
    if p.backend == "cuda":
        lines += [
            f"GPU, key           {gib(p.key_device_bytes)}",
            f"GPU, per partition {gib(p.partition_device_bytes)}",
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
