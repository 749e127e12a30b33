"""GPUs stood in for by the CPU backend: each with its own VRAM budget
(a DeviceBudget, as the CUDA backend's), reserving from it what a GPU backend
would, counting the proofs it makes, and optionally held at a gate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.memory import DeviceBudget, Hold
from cuzk.engine.budget import Budget
from cuzk.engine.config import Config
from cuzk.engine.devices import Device
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import key_raw_bytes

GATE_TIMEOUT_S = 60.0  # a gate never opened fails its test instead of hanging it


def fake_gpu(ordinal: int, limit: int) -> Device:
    """A device with its own budget, like a GPU's VRAM, computing on the CPU backend."""
    return Device(
        ordinal, f"fake GPU {ordinal}", CpuBackend(), limit, Budget(f"vram:{ordinal}", limit)
    )


class VramHandle:
    """What a GPU backend returns for resident data: a hold on its device budget."""

    def __init__(self, inner: object, hold: Hold) -> None:
        self.inner, self.hold = inner, hold

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def close(self) -> None:
        self.hold.release()


class BudgetedCpuBackend(CpuBackend):
    """The CPU backend reserving from a DeviceBudget what a GPU backend would:
    resident bases and matrices for as long as the key lives, MSM and sparse
    product workspaces while they run."""

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__()
        self.vram = vram

    def load_g1(self, count, read, progress=None, resident=None):
        # as the MSM engine decides resident vs streamed bases: by the room it sees
        assert self.vram.free_bytes >= 96 * count, "no room seen for resident bases"
        hold = self.vram.acquire(96 * count, "G1 bases")
        return VramHandle(super().load_g1(count, read, progress), hold)

    def load_g2(self, count, read, progress=None, resident=None):
        hold = self.vram.acquire(192 * count, "G2 bases")
        return VramHandle(super().load_g2(count, read, progress), hold)

    def prepare_matrix(self, m, resident=True):
        return VramHandle(m, self.vram.acquire(8 * m.num_rows + 36 * m.nnz, "CSR"))

    def spmv(self, m, w, rows=None):
        with self.vram.reserve(32 * (m.inner.num_rows + len(w)), "spmv"):
            return super().spmv(m.inner, w, rows)

    def msm_g1(self, bases, scalars, phases=None):
        with self.vram.reserve(64 * len(scalars), "msm_g1 workspace"):
            return super().msm_g1(bases.inner, scalars, phases)

    def msm_g2(self, bases, scalars, phases=None):
        with self.vram.reserve(128 * len(scalars), "msm_g2 workspace"):
            return super().msm_g2(bases.inner, scalars, phases)


class StandInGpu(BudgetedCpuBackend):
    """A budgeted stand-in that counts its proofs (one G2 MSM each) and, while its
    ``gate`` is closed, holds every proof at its first MSM (so that a test can
    keep this device busy until another has done something)."""

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__(vram)
        self.gate = threading.Event()
        self.gate.set()
        self.proofs = 0
        self._lock = threading.Lock()

    def spmv(self, m, w, rows=None):
        assert self.gate.wait(GATE_TIMEOUT_S), "the test never opened this device's gate"
        return super().spmv(m, w, rows)

    def msm_g2(self, bases, scalars, phases=None):
        out = super().msm_g2(bases, scalars, phases)
        with self._lock:
            self.proofs += 1
        return out


def circuit_bytes(cid: str) -> tuple[int, int]:
    """(a key's VRAM, one partition's VRAM) for a demo circuit on a stand-in."""
    kind = demo.DemoKind()
    r1cs = kind.r1cs(cid)
    csr = sum(8 * (m.num_rows + 1) + 40 * m.nnz for m in (r1cs.a, r1cs.b, r1cs.c))
    a_points, b_points = kind.query_sizes(cid)
    key = key_raw_bytes(r1cs.num_constraints, r1cs.num_aux, a_points, b_points) + csr
    return key, fake_gpu(0, 0).working_bytes(r1cs)


def stand_in_gpus(count: int, limit: int) -> tuple[list[Device], list[StandInGpu]]:
    """``count`` stand-in GPUs of ``limit`` bytes of budget each."""
    devices, backends = [], []
    for o in range(count):
        vram = DeviceBudget(o, limit)
        be = StandInGpu(vram)
        devices.append(Device(o, f"stand-in GPU {o}", be, limit, Budget(f"vram:{o}", limit, vram)))
        backends.append(be)
    return devices, backends


def engine_config(tmp_path: Path, **gpus: object) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"gpu_workers_per_device": 2, **gpus},
        pipeline={"synthesis_concurrency": 2},
    )


def wait_for(pred: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait until ``pred`` holds (a state, not a time: the bound only ends a hung test)."""
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.01)


def prove_demo_jobs(
    e, circuit, partitions: tuple[int, ...] = (2, 1), timeout: float = 120.0
) -> list:
    """Submit one demo job of ``circuit`` a partition count and wait for them all."""
    from cuzk.engine.jobs import ProofKind, ProofRequest

    ids = [
        e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(circuit, n))).job_id
        for n in partitions
    ]
    return [e.await_job(j, timeout)[0] for j in ids]
