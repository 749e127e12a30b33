"""The memory plan: the engine's models from a compiled circuit's counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuzk.backends.cuda.backend import CudaBackend
from cuzk.circuits.catalog import compiled_circuit
from cuzk.cli.main import main
from cuzk.engine.kinds.base import key_raw_bytes
from cuzk.engine.memplan import host_csr_bytes, plan, residency, shape_of
from cuzk.synthesis.cache import load_or_build_r1cs

GIB = 1 << 30


@pytest.fixture(scope="module")
def winning(tmp_path_factory):
    cache = tmp_path_factory.mktemp("circuits")
    cc = compiled_circuit("winning-post", "2KiB", cache, True)
    return cc, load_or_build_r1cs(cc, cache)


def test_plan_matches_the_materialised_circuit(winning) -> None:
    cc, r1cs = winning
    p = plan(shape_of(cc), "cuda", host_budget=8 * GIB, gpu_budget=8 * GIB)
    a = r1cs.num_inputs + int(r1cs.a_aux_density().sum())
    b = int(r1cs.b.column_mask().sum())
    assert p.key_file_bytes == key_raw_bytes(r1cs.num_constraints, r1cs.num_aux, a, b)
    assert p.r1cs_host_bytes == sum(
        m.indptr.nbytes + m.indices.nbytes + m.coeffs.nbytes for m in (r1cs.a, r1cs.b, r1cs.c)
    )
    assert p.r1cs_host_bytes == sum(
        host_csr_bytes(m.num_rows, m.nnz) for m in (r1cs.a, r1cs.b, r1cs.c)
    )
    # the GPU figures are the residency the engine loads the key by: at 8 GiB the
    # whole of a 2KiB WinningPoSt key stays resident with whole partitions
    res = residency(shape_of(cc), 8 * GIB)
    assert p.tier == res.tier == "resident" and not p.lean and p.streamed_parts == ()
    assert p.key_device_bytes == res.key_device_bytes
    assert p.partition_device_bytes == res.partition_device_bytes
    assert p.partition_device_bytes >= CudaBackend.prove_device_bytes(
        r1cs.num_constraints, r1cs.num_variables
    )
    # the key's resident parts: bases, matrices as the sparse engine codes them
    # (the long-row list aside), the a and b selections
    engine = CudaBackend.prepared_key_bytes(p.key_file_bytes, r1cs)
    assert p.key_device_bytes <= engine + 8 * 3 * r1cs.num_constraints
    assert p.fits_gpu and p.fits_host
    assert p.partitions_at_once_gpu == (8 * GIB - p.key_device_bytes) // p.partition_device_bytes
    # the witness made on the GPU (the default): a partition holds its hint table
    # on the host; made on the host, its assignment and the witness's temporaries
    from cuzk.engine.kinds.base import HINTS_BYTES, SYNTHESIS_BYTES_PER_VARIABLE

    assert p.device_witness and p.partition_host_bytes == HINTS_BYTES
    host = plan(shape_of(cc), "cuda", host_budget=8 * GIB, gpu_budget=8 * GIB, witness="host")
    nc, nv = r1cs.num_constraints, r1cs.num_variables
    assert not host.device_witness
    assert host.partition_host_bytes == max(
        SYNTHESIS_BYTES_PER_VARIABLE * nv, CudaBackend.prove_host_bytes(nc, nv)
    )


def test_plan_says_what_does_not_fit(winning) -> None:
    cc, _ = winning
    shape = shape_of(cc)
    small = plan(shape, "cuda", host_budget=8 * GIB, gpu_budget=1 << 20)
    assert not small.fits_gpu and small.partitions_at_once_gpu == 0
    cpu = plan(shape, "cpu", host_budget=1 << 20)
    assert not cpu.fits_host and cpu.key_device_bytes == 0 and cpu.key_host_bytes > 0
    with pytest.raises(ValueError, match="backend"):
        plan(shape, "tpu", host_budget=GIB)


def test_memory_plan_command(capsys, tmp_path: Path) -> None:
    args = ["memory-plan", "winning-post", "--sector-size", "2KiB", "--cache-dir", str(tmp_path)]
    assert main([*args, "--host-memory", "16GiB", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["circuit_id"] == "winning-post/2KiB" and got["fits_gpu"] and got["fits_host"]
    assert main([*args, "--host-memory", "16GiB", "--gpu-memory", "1MB"]) == 1
    assert "does NOT fit the key and one partition" in capsys.readouterr().out
    assert main([*args, "--host-memory", "lots"]) == 2
    assert "--host-memory" in capsys.readouterr().out
    # several GPU sizes at once, and a budget given as [gpus] vram_budget gives it
    assert main([*args, "--host-memory", "16GiB", "--gpu-memory", "16GiB,24GiB"]) == 0
    assert capsys.readouterr().out.count("GPU tier           resident") == 2
    assert main([*args, "--host-memory", "16GiB", "--vram-budget", "4GiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_budget_bytes"] == 4 * GIB


def test_the_plan_shows_how_a_lean_partition_splits_its_msm_room() -> None:
    """A 32GiB PoRep at a 16 GiB budget: the MSM room split between H's pass
    and L, A and B beside it (``side_room_bytes``); on the H200's budget the
    whole path shows no split."""
    from test_residency import COUNTS_32G, H200_BUDGET

    from cuzk.engine.memplan import render

    porep = COUNTS_32G["porep"]
    small = plan(porep, "cuda", host_budget=128 * GIB, gpu_budget=16 * GIB)
    assert small.lean and 0 < small.side_room_bytes < small.msm_room_bytes
    h = small.msm_room_bytes - small.side_room_bytes
    text = render(small)
    assert f"H's pass {h / GIB:.1f} GiB, L, A and B beside it" in text
    assert f"beside it {small.side_room_bytes / GIB:.1f} GiB" in text
    big = plan(porep, "cuda", host_budget=128 * GIB, gpu_budget=H200_BUDGET)
    assert not big.lean and big.side_room_bytes == 0 and "H's pass" not in render(big)


def test_a_proofs_partitions_share_the_passes_over_streamed_l_a_b() -> None:
    """A 32GiB PoRep of ten partitions at a 16 GiB budget: each partition's
    compact L, A and B sets (about 0.54 GiB at the shares measured at 8MiB,
    carried on to 32GiB's depth) wait on the host for one pass a query, so
    L, A and B's bases cross PCIe once a proof and H's and the matrices each
    partition (271 GiB, not 560); one partition or the H200's resident tier:
    nothing shared."""
    from test_residency import COUNTS_32G, H200_BUDGET

    from cuzk.backends.base import compact_bytes
    from cuzk.engine.memplan import compact_partition_bytes, render

    porep = COUNTS_32G["porep"]
    one = plan(porep, "cuda", host_budget=128 * GIB, gpu_budget=16 * GIB)
    ten = plan(porep, "cuda", host_budget=128 * GIB, gpu_budget=16 * GIB, partitions=10)
    assert one.shared_queries == () and one.compact_host_bytes == 0
    assert one.pcie_bytes_per_proof == one.pcie_bytes_per_partition
    assert ten.shared_queries == ("l", "a", "b_g1", "b_g2")
    want = sum(
        compact_bytes(n, int(n * share) + 1)
        for n, share in ((porep.num_aux, 0.05), (porep.a_points, 0.04), (porep.b_points, 0.12))
    )
    assert ten.compact_host_bytes == want == compact_partition_bytes(porep, ten.shared_queries)
    assert 0.5 * GIB < want < 0.6 * GIB
    assert ten.host_needed_bytes - one.host_needed_bytes == 10 * want
    assert ten.pcie_bytes_per_proof_unshared == 10 * ten.pcie_bytes_per_partition
    lab = sum(p * porep.points(q) for q, p in (("l", 96), ("a", 96), ("b_g1", 96), ("b_g2", 192)))
    assert ten.pcie_bytes_per_proof == ten.pcie_bytes_per_proof_unshared - 9 * lab
    assert 265 * GIB < ten.pcie_bytes_per_proof < 275 * GIB
    text = render(ten)
    held = f"{want / GIB:.1f} GiB (held until the proof's shared passes: {10 * want / GIB:.1f} GiB"
    assert f"compact L, A, B {held} for 10 partitions)" in text
    assert "per proof (10 partitions) 270.9 GiB, L, A, B once (not shared: 560.0 GiB)" in text
    big = plan(porep, "cuda", host_budget=128 * GIB, gpu_budget=H200_BUDGET, partitions=10)
    assert big.shared_queries == () and big.pcie_bytes_per_proof == 0


def test_partitions_per_proof_by_kind() -> None:
    from cuzk.circuits.catalog import proof_partitions
    from cuzk.errors import InputError

    assert proof_partitions("porep", "32GiB") == 10 and proof_partitions("porep", "2KiB") == 1
    assert proof_partitions("snap", "32GiB") == 16 and proof_partitions("window-post", "32GiB") == 1
    with pytest.raises(InputError):
        proof_partitions("nonsense", "32GiB")
