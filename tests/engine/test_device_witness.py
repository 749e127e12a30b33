"""The witness made on the proving device, through the engine, on a stand-in GPU:
the plan's arrays, each assignment, its hint table and the passes' registers
reserved from the device's budget as the CUDA witness reserves them
(``backends/cuda/witness.py``), and every byte of it inside the engine's own
reservations (the plan's, the partition's)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from gpu_stand_ins import BudgetedCpuBackend

from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.backends.cuda.witness import CudaWitness
from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import write_sector_proof
from cuzk.engine.budget import Budget
from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, Priority, ProofKind, ProofRequest
from cuzk.synthesis.program_numpy import NumpyWitness

RND = bytes(range(32))
WINNING_2K = 0  # RegisteredPoStProof

pytestmark = pytest.mark.usefixtures("module_circuit_cache")


class BudgetedWitness(NumpyWitness):
    """The numpy interpreter reserving what ``CudaWitness`` reserves."""

    def __init__(self, vram: DeviceBudget) -> None:
        self.vram = vram
        self.holds: list = []
        self.assignments: dict[int, list] = {}

    def _keep(self, nbytes: int, what: str) -> None:
        self.holds.append(self.vram.acquire(nbytes, what))

    def upload(self, a):
        self._keep(a.nbytes, "witness plan arrays")
        return a

    def poseidon(self, head, values):
        self._keep(32 * len(values) + head.nbytes, "Poseidon tables")
        return super().poseidon(head, values)

    def program(self, p):
        n = 4 * np.asarray(p.ops).size + 4 * np.asarray(p.args).size
        self._keep(n + 8 * np.asarray(p.uconst).size + 32 * len(p.fconst), "witness programs")
        return p

    def zeros(self, n):
        W = super().zeros(n)
        self.assignments[id(W)] = [self.vram.acquire(32 * n, "witness assignment")]
        return W

    def hints(self, table, W):
        self.assignments[id(W)].append(self.vram.acquire(table.nbytes, "witness hints"))
        return table

    def free(self, W) -> None:
        for h in self.assignments.pop(id(W)):
            h.release()

    def run(self, W, hints, poseidon, p, lanes):
        with self.vram.reserve(CudaWitness.register_bytes(p, lanes.lanes), f"pass {p.key}"):
            super().run(W, hints, poseidon, p, lanes)

    def run_bytes(self, plan) -> int:
        return int(plan.run_bytes(CudaWitness.register_bytes))


class CountingWitness(BudgetedWitness):
    """Also counts the assignments alive at once (partitions in flight on the device)."""

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__(vram)
        self.most = 0

    def zeros(self, n):
        W = super().zeros(n)
        self.most = max(self.most, len(self.assignments))
        return W


class StreamedBackend(BudgetedCpuBackend):
    """A budgeted stand-in with the CUDA backend's ``work_stream`` capability,
    recording the role each MSM ran under (the calling thread's, as CuPy's
    current stream is)."""

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__(vram)
        self._local = threading.local()
        self.roles: dict[str, set] = {"msm": set(), "witness pass": set()}

    def role(self):
        stack = getattr(self._local, "stack", [])
        return stack[-1] if stack else None

    @contextmanager
    def work_stream(self, role: str):
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append(role)
        try:
            yield role
        finally:
            stack.pop()

    def msm_g1(self, bases, scalars, phases=None):
        self.roles["msm"].add(self.role())
        return super().msm_g1(bases, scalars, phases)

    def msm_g2(self, bases, scalars, phases=None):
        self.roles["msm"].add(self.role())
        return super().msm_g2(bases, scalars, phases)


class RoleWitness(CountingWitness):
    def __init__(self, vram: DeviceBudget, backend: StreamedBackend) -> None:
        super().__init__(vram)
        self.backend = backend

    def run(self, W, hints, poseidon, p, lanes):
        self.backend.roles["witness pass"].add(self.backend.role())
        super().run(W, hints, poseidon, p, lanes)


def _winning_engine(
    tmp_path: Path, limit: int, streams: bool = False
) -> tuple[Engine, Device, CountingWitness]:
    vram = DeviceBudget(0, limit)
    be = (StreamedBackend if streams else BudgetedCpuBackend)(vram)
    dev = Device(0, "budgeted GPU", be, limit, None)
    dev.budget = Budget("vram:0", limit, device_budget=vram)
    maker = RoleWitness(vram, be) if streams else CountingWitness(vram)
    dev._witness = maker
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / f"j{limit}.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params"), "generate_dev_keys": True},
        memory={"total_budget": "4GiB", "eviction_min_idle": "0s"},
        pipeline={"witness": "device", "synthesis_lookahead": 4},
    )
    e = Engine(cfg, devices=[dev])
    e.start()
    return e, dev, maker


def _winning_jobs(e: Engine, n: int, priority: Priority = Priority.UNSPECIFIED) -> list:
    win = config_for_registered_proof(WINNING_2K)
    vanilla = write_sector_proof(generate_sector_proof(win, RND, 5))
    req = ProofRequest(
        ProofKind.WINNING_POST,
        registered_proof=WINNING_2K,
        vanilla_proofs=(vanilla,),
        randomness=RND,
        priority=priority,
    )
    ids = [e.submit(req).job_id for _ in range(n)]
    return [e.await_job(j, 300)[0] for j in ids]


def test_device_witness_fits_its_reservations_and_gives_everything_back(tmp_path: Path) -> None:
    e, dev, maker = _winning_engine(tmp_path, 4 << 30)
    vram = dev.backend.vram
    try:
        jobs = _winning_jobs(e, 2)
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        assert vram.overdrawn_by_operation == {}, vram.overdrawn_by_operation
        assert "witness plan winning-2k" in vram.peak_by_operation
        assert vram.peak_by_operation["witness assignment"] > 0
        assert maker.assignments == {}  # each assignment freed after its proof
        # the key proves with the matrices on its device and holds no host R1CS;
        # the kind let go of the mapping the upload read (a later r1cs() maps the
        # cache file again)
        (key,) = e.keys._entries["winning-2k"].prepared.values()
        assert key.r1cs is None and key.matrices
        plan_holds = sum(h.nbytes for h in maker.holds)
        assert 0 < plan_holds <= vram.peak_by_operation["witness plan winning-2k"]
        # a dropped device gives its plans back, then the key goes: nothing is left
        e.pipeline.drop_plans(dev)
        assert maker.holds == []
        was, freed = e.evict("winning-2k")
        assert was and freed > 0
        assert vram.reserved_bytes == 0 and dev.budget.reserved == 0
    finally:
        e.stop()


def test_a_witness_starts_on_its_share_while_another_partition_proves(tmp_path: Path) -> None:
    """Where the device holds one partition's whole working set and a second's
    witness share but not two whole sets, the second partition makes its witness
    while the first proves, then takes the rest of its set; nothing overdraws."""
    e, dev, maker = _winning_engine(tmp_path, 4 << 30)
    try:  # the sizes, from a device with room for everything
        assert all(j.state == JobState.COMPLETED for j in _winning_jobs(e, 1))
        entry = e.keys._entries["winning-2k"]
        key = entry.reservations[0].nbytes
        plan_res = sum(r.nbytes for _, r, _ in e.pipeline._device_plans.values())
        handler = e.kinds.handler(ProofKind.WINNING_POST)
        r1cs = handler.r1cs("winning-2k")
        share = 32 * handler.shape("winning-2k")[1] + maker.run_bytes(
            handler.witness_plan("winning-2k")
        )
        whole = dev.working_bytes(r1cs) + maker.run_bytes(handler.witness_plan("winning-2k"))
    finally:
        e.stop()
    assert share < whole
    limit = key + plan_res + whole + share + (1 << 20)
    assert limit < key + plan_res + 2 * whole  # two whole sets do not fit
    e, dev, maker = _winning_engine(tmp_path, limit)
    try:
        jobs = _winning_jobs(e, 4, Priority.NORMAL)
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        assert maker.most == 2  # a witness was made while another partition proved
        assert dev.backend.vram.overdrawn_by_operation == {}
        assert maker.assignments == {}
        # time-critical partitions take their whole set at once (the share slot
        # may be held by a partition waiting for another): one at a time here
        maker.most = 0
        jobs = _winning_jobs(e, 2)
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        assert maker.most == 1
        assert dev.backend.vram.overdrawn_by_operation == {}
    finally:
        e.stop()


def test_the_witness_and_the_proof_run_on_their_own_streams(tmp_path: Path) -> None:
    """Where the backend has work streams, a partition's witness passes run on
    the witness's and its MSMs on the prover's (the CUDA backend schedules the
    latter first), whichever worker thread runs them; a time-critical
    partition's both run on the urgent stream (scheduled before either)."""
    e, dev, _ = _winning_engine(tmp_path, 4 << 30, streams=True)
    try:
        jobs = _winning_jobs(e, 2, Priority.NORMAL)
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        assert dev.backend.roles == {"msm": {"prove"}, "witness pass": {"witness"}}
        jobs = _winning_jobs(e, 1)  # CRITICAL, WinningPoSt's own priority
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
    finally:
        e.stop()
    assert dev.backend.roles == {"msm": {"prove", "urgent"}, "witness pass": {"witness", "urgent"}}
