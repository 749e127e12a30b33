"""Residency tiers: every 32GiB kind fits every GPU a storage provider owns.

The counts of the four 32GiB circuits are pinned here (and checked against
the compiled circuits once), so the table of plans runs in milliseconds: the
plan is arithmetic over the CUDA backend's memory model.
"""

from __future__ import annotations

import pytest

from cuzk.backends import memory_model
from cuzk.engine.keystore.residency import (
    MATRICES,
    QUERIES,
    WITNESS_ALLOWANCE,
    lean_plans,
    plan,
)
from cuzk.r1cs.counts import Counts

GIB = 1 << 30
# The H200's default budget: 0.9 of the 143,771 MiB the device reports.
H200_BUDGET = int(0.9 * 143771 * (1 << 20))
BUDGETS = [16 * GIB, 24 * GIB, 48 * GIB, 80 * GIB, H200_BUDGET]

COUNTS_32G = {
    "porep": Counts(130278869, 328, 130169893, (309405051, 130327340, 282656500), 2466,
                    129753620, 33112282, "porep-32GiB"),
    "window-post": Counts(125305057, 25840, 126902376, (862416559, 127398015, 157401792), 985,
                          96205645, 91925767, "window-post/32GiB"),
    "snap": Counts(81049504, 5, 80978488, (190374912, 81118127, 172187492), 1522,
                   80743586, 20983608, "snap-32GiB"),
    "winning-post": Counts(370723, 133, 375210, (2549185, 376662, 465300), 985,
                           284329, 272185, "winning-post/32GiB"),
}  # fmt: skip

MODEL = memory_model("cuda")


@pytest.mark.slow
def test_pinned_counts_are_the_compiled_circuits(tmp_path) -> None:
    from cuzk.circuits.catalog import compiled_circuit

    for kind, want in COUNTS_32G.items():
        assert compiled_circuit(kind, "32GiB", tmp_path, True).counts() == want, kind


@pytest.mark.parametrize("kind", list(COUNTS_32G))
@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: f"{b / GIB:.0f}GiB")
def test_every_32gib_kind_fits_every_budget(kind: str, budget: int) -> None:
    r = plan(COUNTS_32G[kind], budget, MODEL)
    assert r.fits, (kind, budget, r)
    assert r.key_device_bytes + r.in_flight * r.partition_device_bytes <= budget
    # the load's temporaries borrow the partitions' room
    assert r.key_device_bytes + r.key_load_bytes <= budget
    streamed = set(r.streamed_parts)
    assert streamed == set(QUERIES + MATRICES) - r.resident
    assert r.key_pinned_bytes == sum(r.parts[p] for p in streamed)
    if not streamed:
        assert r.pcie_bytes_per_partition() == 0
    if r.lean and r.fork_share:
        # H's pass and the side branch's beside it: both rooms in the partition's
        # estimate, beside the assignment and h
        c = COUNTS_32G[kind]
        m = MODEL.domain(c.num_constraints)
        assert r.h_room + r.fork_share == r.msm_room and r.h_room >= r.fork_share
        assert r.partition_device_bytes >= 32 * (c.num_variables + m) + r.msm_room


@pytest.mark.parametrize("kind", list(COUNTS_32G))
def test_the_h200_keeps_todays_resident_path(kind: str) -> None:
    """On the H200's default budget every key is resident with whole partitions
    and the side branch's full share: the path the headline was measured on."""
    c = COUNTS_32G[kind]
    r = plan(c, H200_BUDGET, MODEL)
    assert r.tier == "resident" and not r.lean
    assert r.fork_share == MODEL.default_fork_share(c.num_constraints, c.num_variables)


def test_windowpost_fits_the_h200_with_its_key_made_in_gpu_memory() -> None:
    """The regression of 2026-12-03: a 32GiB WindowPoSt partition and its key
    needed 127.9 GiB of the H200's 125.8 when the load's temporaries (staging,
    the matrices' conversion) were counted in the key for good. They now come
    out of the first partition's room."""
    r = plan(COUNTS_32G["window-post"], H200_BUDGET, MODEL)
    dev_points = 1 << 30  # keystore.store.DEV_POINTS_DEVICE_BYTES
    assert r.key_device_bytes + r.partition_device_bytes <= H200_BUDGET
    assert r.key_load_bytes + dev_points <= r.partition_device_bytes


@pytest.mark.parametrize("kind", ["porep", "window-post", "snap"])
def test_less_memory_moves_more_of_the_key(kind: str) -> None:
    plans = [plan(COUNTS_32G[kind], b, MODEL) for b in sorted(BUDGETS)]
    traffic = [p.pcie_bytes_per_partition() for p in plans]
    assert traffic == sorted(traffic, reverse=True)
    assert plans[0].lean and plans[0].tier in ("streamed", "mixed")
    assert sum(plans[0].parts.values()) > 16 * GIB  # a 16 GiB card streams most of the key


@pytest.mark.parametrize("budget", [16 * GIB, 24 * GIB], ids=["16GiB", "24GiB"])
def test_a_lean_porep_partition_runs_l_a_and_b_beside_h(budget: int) -> None:
    """At 16 and 24 GiB a 32GiB PoRep partition's MSM room splits between H's
    pass and the side branch running L, A and B beside it: each part at
    least a pass's least room, H's the larger (≈ 4 and 2 GiB at 16), and the
    partition's estimate holds both rooms beside the assignment, h and any
    whole gather (the step where H's MSM and the branch run together), within
    the budget with the key."""
    c = COUNTS_32G["porep"]
    nc, nv = c.num_constraints, c.num_variables
    r = plan(c, budget, MODEL, WITNESS_ALLOWANCE)
    assert r.lean and r.fork_share > 0 and r.in_flight == 1
    least = MODEL.lean_msm_room(nc, max(c.a_points, c.b_points, c.num_aux))
    assert r.h_room + r.fork_share == r.msm_room
    assert r.h_room > r.fork_share >= least
    m = MODEL.domain(nc)
    gathered = 32 * max(
        c.a_points if "a" in r.resident else 0,
        c.b_points if {"b_g1", "b_g2"} & r.resident else 0,
    )
    together = 32 * nv + 32 * m + r.h_room + r.fork_share + gathered + WITNESS_ALLOWANCE
    assert r.partition_device_bytes >= together
    assert r.key_device_bytes + r.partition_device_bytes <= budget
    if budget == 16 * GIB:
        assert r.tier == "streamed" and gathered == 0
        assert 3.5 * GIB <= r.h_room <= 4.5 * GIB and 1.5 * GIB <= r.fork_share <= 2.5 * GIB
    assert "L, A and B beside H's MSM" in r.describe()


def test_a_side_branch_counts_a_whole_gather_beside_h() -> None:
    """The lean estimate is honest about the branch: beside resident a or b
    bases their scalars are gathered whole, while H's MSM still holds h and
    its room, so the forked step holds the gather too; streamed bases gather
    a chunk at a time inside their pass (no whole vector)."""
    c = COUNTS_32G["porep"]
    nc, nv, q = c.num_constraints, c.num_variables, c.num_aux
    room, gathered = 6 * GIB, 32 * c.a_points
    serial = MODEL.lean_partition_bytes(nc, nv, q, 0, room, gathered, fork=False)
    forked = MODEL.lean_partition_bytes(nc, nv, q, 0, room, gathered, fork=True)
    streamed = MODEL.lean_partition_bytes(nc, nv, q, 0, room, 0, fork=True)
    assert forked - serial == gathered  # H's step: h, the rooms and the gather at once
    assert streamed == MODEL.lean_partition_bytes(nc, nv, q, 0, room, 0, fork=False)
    # the branch's share: a third of the room, none where H's part would fall below a pass
    least = MODEL.lean_msm_room(nc, q)
    assert MODEL.lean_fork_share(nc, q, 6 * GIB) == 2 * GIB
    assert MODEL.lean_fork_share(nc, q, 2 * least - 1) == 0
    assert MODEL.lean_fork_share(nc, q, 2 * least + (1 << 20)) >= least


def test_nothing_fits_a_budget_below_a_lean_partition() -> None:
    r = plan(COUNTS_32G["porep"], 4 * GIB, MODEL)
    assert not r.fits and r.tier == "none" and r.in_flight == 0


def test_a_part_is_resident_only_where_the_rest_still_fits() -> None:
    """The resident set keeps the most bytes off PCIe that fit beside a lean
    partition: giving any streamed part a place would not fit."""
    c = COUNTS_32G["porep"]
    for budget in (24 * GIB, 48 * GIB):
        r = plan(c, budget, MODEL)
        for part in r.streamed_parts:
            assert r.key_device_bytes + r.partition_device_bytes + r.parts[part] > budget


@pytest.mark.parametrize("kind", list(COUNTS_32G))
@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: f"{b / GIB:.0f}GiB")
@pytest.mark.parametrize("group", [0, 1, 5], ids=["shared", "off", "groups-of-5"])
def test_the_ranking_by_traffic_keeps_the_fit(kind: str, budget: int, group: int) -> None:
    """Whatever the passes' sharing (the default, off, groups of five), every
    kind fits every budget with no overdraw."""
    c = COUNTS_32G[kind]
    r = plan(c, budget, MODEL, WITNESS_ALLOWANCE, group)
    assert r.fits, (kind, budget, group, r)
    assert r.key_device_bytes + r.in_flight * r.partition_device_bytes <= budget
    assert r.key_device_bytes + r.key_load_bytes <= budget
    if not r.lean:
        assert r.tier == "resident"


@pytest.mark.parametrize("group", [0, 10, 1], ids=["shared", "groups-of-10", "off"])
def test_the_chosen_set_moves_the_least_traffic(group: int) -> None:
    """At 24 GiB (the plan's choice changes with the sharing) no other set that
    fits with a side branch moves fewer key bytes by the ranking's count, and
    among those moving as few the chosen one keeps the most bytes resident."""
    c = COUNTS_32G["porep"]
    r = plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, group)
    others = [o for o in lean_plans(c, 24 * GIB, MODEL) if o.fork_share > 0]
    assert r in others
    best = min(o.ranking_traffic(group) for o in others)
    assert r.ranking_traffic(group) == best
    resident = sum(r.parts[p] for p in r.resident)
    for o in others:
        if o.ranking_traffic(group) == best:
            assert sum(o.parts[p] for p in o.resident) <= resident


def test_shared_passes_keep_the_matrices_resident_at_24_gib() -> None:
    """32GiB PoRep at 24 GiB. With its ten partitions sharing the passes over
    L, A and B (the default), their bases cross once a proof whatever stays,
    so the plan keeps the parts that cross each partition: H's 12 GiB does
    not fit beside a lean partition (12.6 GiB of key with the index, 13.0 a
    partition at the least room: 25.6 GiB), so two of the matrices (A and C,
    8.9 GiB) stay, not B and b_g2 (9.0 GiB, the most bytes: what sharing
    off keeps). A proof then moves 182.5 GiB of key, not 234.7; with
    sharing off it moves less the other way."""
    c = COUNTS_32G["porep"]
    shared = plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, 0)
    alone = plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, 1)
    assert shared.resident == {"A", "C"} and shared.fork_share > 0
    assert alone.resident == {"B", "b_g2"} and alone.fork_share > 0
    assert plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE) == alone  # the default: off
    assert shared.pcie_bytes_per_proof(10) < alone.pcie_bytes_per_proof(10)
    assert alone.pcie_bytes_per_proof(10, False) < shared.pcie_bytes_per_proof(10, False)
    assert 182 * GIB < shared.pcie_bytes_per_proof(10) < 183 * GIB
    assert 234 * GIB < alone.pcie_bytes_per_proof(10) < 235 * GIB
    # H alone beside the least lean partition overdraws 24 GiB
    h_only = [o for o in lean_plans(c, 24 * GIB, MODEL) if "h" in o.resident]
    assert h_only == []


def test_h_stays_resident_over_l_a_and_b_where_it_fits() -> None:
    """Where H fits beside a lean partition (48 GiB), sharing keeps it (and
    the matrices) and streams L and A, whose bases cross once a proof; the
    same budget's sets that keep L or A in H's place move more."""
    c = COUNTS_32G["porep"]
    r = plan(c, 48 * GIB, MODEL, WITNESS_ALLOWANCE, 0)
    assert {"h", "A", "B", "C"} <= r.resident and not {"l", "a"} & r.resident
    assert r.ranking_traffic(0)[0] == 0  # nothing crosses each partition
    for o in lean_plans(c, 48 * GIB, MODEL):
        if o.fork_share and "h" not in o.resident:
            assert o.ranking_traffic(0) > r.ranking_traffic(0)


def test_sharing_off_ranks_by_a_partitions_traffic() -> None:
    """``group`` 1: each streamed part's bytes once a partition (the most bytes
    resident, as before sharing); a negative group is refused."""
    c = COUNTS_32G["porep"]
    r = plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, 1)
    assert r.ranking_traffic(1) == (sum(r.parts[p] for p in r.streamed_parts), 0)
    shared = plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, 0)
    own = sum(shared.parts[p] for p in ("h", "B"))
    once = sum(shared.parts[p] for p in ("l", "a", "b_g1", "b_g2"))
    assert shared.ranking_traffic(0) == (own, once)
    assert shared.ranking_traffic(10) == (own + -(-once // 10), 0)
    with pytest.raises(ValueError, match="group -1"):
        plan(c, 24 * GIB, MODEL, WITNESS_ALLOWANCE, -1)


@pytest.mark.parametrize("setting", [0, 1, 5])
def test_the_daemon_and_memory_plan_rank_alike(setting: int) -> None:
    """``[gpus] shared_pass_partitions`` reaches the planner the same way from
    the key store (a batched kind: the setting; a PoSt: 1) and from
    ``cuzk memory-plan`` (a proof of several partitions: the setting; of one:
    1); with sharing off memory-plan shows no shared passes."""
    from types import SimpleNamespace

    from cuzk.engine.keystore.store import _plan_on
    from cuzk.engine.memplan import plan as memory_plan

    c = COUNTS_32G["porep"]
    device = SimpleNamespace(
        budget=SimpleNamespace(limit=24 * GIB), backend=SimpleNamespace(memory_model=MODEL)
    )
    for batchable, partitions in ((True, 10), (False, 1)):
        handler = SimpleNamespace(counts=lambda cid: c, batchable=batchable)
        entry = SimpleNamespace(handler=handler, circuit_id="porep-32g")
        daemon = _plan_on(device, entry, setting)
        shown = memory_plan(c, "cuda", 64 * GIB, 24 * GIB, "hints", partitions, setting)
        group = setting if batchable else 1
        assert daemon == plan(c, 24 * GIB, MODEL, 0, group)
        assert shown.streamed_parts == daemon.streamed_parts
        assert daemon.resident == ({"B", "b_g2"} if group == 1 else {"A", "C"})
        assert bool(shown.shared_queries) == (group != 1)
