"""The devices the engine proves on: CUDA GPUs, or the CPU when there is none.

Each device has a backend instance and, for a GPU, a VRAM budget backed by
the backend's own device budget (:func:`cuzk.backends.open_gpu`). The CPU "device" has no
budget of its own: what it holds (prepared keys, prover temporaries) counts
against the host budget.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk import backends
from cuzk.algebra.arrays import fr_to_array
from cuzk.backends import BackendChoice, choose_backend
from cuzk.backends.base import Backend
from cuzk.engine.budget import Budget
from cuzk.engine.config import GpusConfig, vram_budget_bytes
from cuzk.errors import DeviceError, InputError
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)


@dataclass
class Device:
    ordinal: int
    name: str
    backend: Backend
    total_bytes: int  # the device's memory (0 for the CPU: see the host budget)
    budget: Budget | None  # VRAM budget; None = the device uses host memory
    _witness: Any = field(default=None, repr=False, compare=False)
    _witness_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.backend.name}:{self.ordinal}"

    @property
    def host_resident(self) -> bool:
        """Keys prepared for this device live in host memory (the CPU backend)."""
        return self.budget is None

    def free_bytes(self) -> int | None:
        """The device's free memory as its driver reports it (what nvidia-smi shows,
        whatever the budget); None for the CPU, or when the device cannot say."""
        return self.backend.free_device_bytes()

    def activate(self) -> AbstractContextManager[Any]:
        """Make this the current device of the calling thread (a no-op on the CPU)."""
        return self.backend.activate()

    def stream(self, role: str) -> AbstractContextManager[Any]:
        """The calling thread's work of ``role`` ("urgent", "prove" or
        "witness") on this device's stream for it (a no-op on the CPU)."""
        return self.backend.work_stream(role)

    def key_bytes(self, point_bytes: int, r1cs: R1CS) -> int:
        """Device memory a prepared key (its points: ``point_bytes`` as raw affine
        limbs) and its circuit's matrices occupy, the load's staging included."""
        return int(self.backend.prepared_key_bytes(point_bytes, r1cs))

    def host_prover_bytes(self, num_constraints: int, num_variables: int) -> int:
        """Host memory a proof of this shape holds on this device (its backend's model)."""
        return int(self.backend.prove_host_bytes(num_constraints, num_variables))

    def witness_device(self) -> Any:
        """Where this device makes witnesses from static plans (one per device):
        the witness kernels on a GPU, the numpy interpreter on the CPU. Made
        under a lock: two GPU workers asking at once got two makers, and the
        plan uploaded to the first was uploaded again, inside the second's
        witness share (seen 2026-12-02: the 32GiB PoRep's first partitions)."""
        with self._witness_lock:
            if self._witness is None:
                with self.activate():
                    self._witness = witness_device_for(self.backend)
            return self._witness

    def working_bytes(self, r1cs: R1CS) -> int:
        """Device memory one partition's proof needs beyond its key."""
        return int(self.backend.prove_device_bytes(r1cs.num_constraints, r1cs.num_variables))

    def probe(self) -> None:
        """A small computation on the device, checked on the host (an NTT and its
        inverse over 64 values); raises when the device cannot do it. Whether a
        device that failed may take work again (:mod:`cuzk.engine.health`)."""
        values = fr_to_array(range(1, PROBE_SIZE + 1))
        be = self.backend
        with self.activate():
            back = be.to_host(be.intt(be.ntt(be.asarray(values))))
            be.synchronize()
        if not np.array_equal(np.asarray(back), values):
            raise DeviceError(
                self.ordinal, "probe: an NTT and its inverse did not give back the input"
            )


PROBE_SIZE = 64


def prepare_kernels(devices: list[Device]) -> float:
    """Load every kernel module on each device whose backend has kernels to load
    (the CUDA one), compiling what is not cached yet: the daemon does this before
    it reports ready, so that no proof waits on a compile. Logged at INFO, with
    the cache's path and each module's time; returns the seconds it took."""
    import time

    todo = [d for d in devices if d.backend.compiles_kernels]
    if not todo:
        return 0.0
    from cuzk import environment

    prebuilt = environment.kernel_prebuilt()
    log.info(
        "kernels: loading every kernel module on %s before reporting ready "
        "(cache %s%s); what is not cached is compiled now with NVRTC (about a minute "
        "on a first start; `cuzk kernels` does it ahead of time)",
        ", ".join(d.label for d in todo),
        environment.kernel_cache_dir(),
        f", prebuilt {prebuilt}" if prebuilt else "",
    )
    start = time.perf_counter()
    for d in todo:

        def progress(done: int, total: int, what: str, seconds: float, d: Device = d) -> None:
            log.info("kernels: %s [%d/%d] %s: %.1f s", d.label, done, total, what, seconds)

        try:
            with d.activate():
                d.backend.load_kernels(progress)
        except Exception as e:
            raise RuntimeError(f"kernels: cannot load the kernels on {d.label}: {e}") from e
    took = time.perf_counter() - start
    log.info("kernels: ready in %.1f s", took)
    return took


def witness_device_for(backend: Backend) -> Any:
    """Where ``backend`` makes witnesses from static plans: its own (the witness
    kernels on a GPU), else the numpy interpreter."""
    made = backend.witness_device()
    if made is not None:
        return made
    from cuzk.synthesis.program_numpy import NumpyWitness

    return NumpyWitness()


def _open_gpu(ordinal: int, limit_bytes: int) -> Backend:
    """One GPU's backend (tests put a stand-in here)."""
    return backends.open_gpu(ordinal, limit_bytes)


def _gpus() -> list[backends.GpuInfo]:
    """The GPUs the host has (tests put stand-ins here)."""
    return backends.gpus()


def select_ordinals(devices: tuple[int, ...], count: int, source: str = "config") -> list[int]:
    """The GPUs ``[gpus] devices`` selects on a host with ``count`` of them (all
    when it is empty); an ordinal the host does not have is an InputError naming
    the key."""
    if count < 1:
        raise InputError(source, "gpus.devices", "no GPU is visible to CuPy on this host")
    if not devices:
        return list(range(count))
    missing = [i for i in devices if not 0 <= i < count]
    if missing:
        raise InputError(
            source,
            "gpus.devices",
            f"no GPU {', '.join(map(str, missing))} on this host: it has {count} "
            f"(ordinals 0 to {count - 1}); list some of them, or [] for all",
        )
    return list(devices)


def discover(cfg: GpusConfig) -> list[Device]:
    """The devices of a config: its GPUs (``[gpus] devices``, all visible ones when
    none are listed) or the CPU."""
    return devices_for(choose_backend(cfg.backend), cfg)


def devices_for(choice: BackendChoice, cfg: GpusConfig) -> list[Device]:
    """The devices of a backend choice (:func:`cuzk.backends.choose_backend`): said
    at INFO with its reason, at WARNING where the host has a GPU the CPU backend
    leaves idle; a choice that cannot be met (``cuda`` without CuPy) raises
    with the command that fixes it."""
    if choice.error:
        raise RuntimeError(choice.error)
    if choice.warning:
        log.warning("%s", choice.warning)
    log.info("backend: %s (%s)", choice.name, choice.reason)
    if choice.name != "cuda":
        if cfg.devices:
            log.warning(
                "[gpus] devices %s is ignored: proving on the CPU backend", list(cfg.devices)
            )
        return [Device(0, "cpu", backends.get_backend("cpu"), 0, None)]

    infos = _gpus()
    out = []
    for i in select_ordinals(cfg.devices, len(infos)):
        info = infos[i]
        be = _open_gpu(i, vram_budget_bytes(cfg, info.total_bytes))
        own = be.device_budget
        budget = Budget(f"GPU {i} VRAM", own.limit_bytes, device_budget=own)
        out.append(Device(i, info.name, be, info.total_bytes, budget))
    return out
