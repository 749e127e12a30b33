"""The SRS manager: proving keys per circuit id, in tiers, within the budgets.

Tiers (the values of cuzk.v1.SRSStatus.Tier):

- HOT: prepared on a device: for the CPU backend the key's points as the
  pairing library's objects in host memory, for a GPU the key uploaded to
  its VRAM; counted in the host or that device's budget.
- WARM: the key's arrays memory-mapped from the cache (page cache, not
  counted in any budget).
- COLD: on disk only.

Keys in use are pinned by reference counts and never evicted; idle HOT keys
are evicted least recently used first when a budget is short, once idle for
``eviction_min_idle``. EvictSRS drops a key from HOT to WARM (or WARM to
COLD) and is refused while proofs use it.

Key cache: development keys (a single-party setup: INSECURE, for the demo
kind and, when ``[srs] generate_dev_keys`` says so, for Filecoin kinds) are
generated on first use and stored under ``<param_cache>/cuzk-dev-keys/<circuit
id>/`` as one ``.npy`` per query (h, l, a, b_g1, b_g2) plus ``vk.npz`` and
``meta.json``; this is cuzk's own format, memory-mappable, used until the
bellperson ``.params`` reader lands in ``cuzk.formats.bellperson``.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.algebra.arrays import g1_from_array, g1_to_array, g2_from_array, g2_to_array
from cuzk.engine.budget import Budget, Reservation
from cuzk.engine.devices import Device
from cuzk.engine.jobs import InUse
from cuzk.engine.kinds import KindRegistry
from cuzk.engine.kinds.base import (
    ProofKindHandler,
    key_gpu_setup_bytes,
    key_host_bytes,
    key_raw_bytes,
)
from cuzk.errors import InputError, ResourceError
from cuzk.groth16 import prover, setup
from cuzk.groth16.keys import ProvingKey, VerifyingKey
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)

DEV_KEY_DIR = "cuzk-dev-keys"
FORMAT_VERSION = 1
_QUERIES = ("h", "l", "a", "b_g1", "b_g2")


class Tier(enum.IntEnum):
    HOT = 0
    WARM = 1
    COLD = 2


# --- the key cache on disk ----------------------------------------------------
def save_key(directory: Path, circuit_id: str, pk: ProvingKey, r1cs: R1CS) -> None:
    """Write a key atomically: into a temporary folder, then renamed into place."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{circuit_id}.", dir=directory.parent))
    try:
        for q in _QUERIES:
            np.save(tmp / f"{q}.npy", np.ascontiguousarray(getattr(pk, q)))
        vk = pk.vk
        np.savez(
            tmp / "vk.npz",
            g1=g1_to_array([vk.alpha_g1, vk.beta_g1, vk.delta_g1]),
            g2=g2_to_array([vk.beta_g2, vk.gamma_g2, vk.delta_g2]),
            ic=g1_to_array(list(vk.ic)),
        )
        meta = {
            "format": FORMAT_VERSION,
            "circuit_id": circuit_id,
            "num_constraints": r1cs.num_constraints,
            "num_inputs": r1cs.num_inputs,
            "num_aux": r1cs.num_aux,
            "generated_at": time.time(),
            "insecure_development_key": True,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(directory)
        os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_key(directory: Path, mmap: bool = True) -> ProvingKey:
    """A key from the cache, its queries memory-mapped (the WARM tier)."""
    meta = json.loads((directory / "meta.json").read_text())
    if meta.get("format") != FORMAT_VERSION:
        raise InputError(str(directory), "meta.json", f"unknown key format {meta.get('format')}")
    arrays = {q: np.load(directory / f"{q}.npy", mmap_mode="r" if mmap else None) for q in _QUERIES}
    with np.load(directory / "vk.npz") as z:
        g1 = g1_from_array(z["g1"])
        g2 = g2_from_array(z["g2"])
        ic = tuple(g1_from_array(z["ic"]))
    vk = VerifyingKey(
        alpha_g1=g1[0],
        beta_g1=g1[1],
        beta_g2=g2[0],
        gamma_g2=g2[1],
        delta_g1=g1[2],
        delta_g2=g2[2],
        ic=ic,
    )
    return ProvingKey(vk=vk, **arrays)


def key_dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


# --- entries and leases -------------------------------------------------------
@dataclass
class SrsEntry:
    circuit_id: str
    handler: ProofKindHandler
    directory: Path
    size_bytes: int = 0
    pk: ProvingKey | None = None  # WARM when set
    prepared: dict[int, prover.PreparedKey] = field(default_factory=dict)  # HOT per device
    reservations: dict[int, Reservation] = field(default_factory=dict)
    refs: int = 0  # in-flight partitions using the key
    device_refs: dict[int, int] = field(default_factory=dict)
    last_used: float = 0.0
    load_lock: threading.Lock = field(default_factory=threading.Lock)
    device_locks: dict[int, threading.Lock] = field(default_factory=dict)

    @property
    def tier(self) -> Tier:
        if self.prepared:
            return Tier.HOT
        if self.pk is not None:
            return Tier.WARM
        return Tier.COLD


@dataclass
class HostLease:
    """A pinned key plus a partition's host working set (held synthesis → proof)."""

    entry: SrsEntry
    working: Reservation
    load_ms: float


@dataclass
class DeviceLease:
    entry: SrsEntry
    device: Device
    key: prover.PreparedKey
    working: Reservation | None
    load_ms: float


@dataclass(frozen=True)
class SrsStatus:
    circuit_id: str
    tier: Tier
    size_bytes: int
    ref_count: int
    devices: tuple[int, ...]
    idle_s: float


class SrsManager:
    def __init__(
        self,
        cache_dir: Path,
        kinds: KindRegistry,
        host_budget: Budget,
        devices: list[Device],
        eviction_min_idle: float = 300.0,
        generate_dev_keys: bool = False,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.kinds = kinds
        self.host_budget = host_budget
        self.devices = {d.ordinal: d for d in devices}
        self.eviction_min_idle = eviction_min_idle
        self.generate_dev_keys = generate_dev_keys
        self._entries: dict[str, SrsEntry] = {}
        self._lock = threading.RLock()
        self._gen_locks: dict[str, threading.Lock] = {}
        self._r1cs_locks: dict[str, threading.Lock] = {}
        self._r1cs_ready: set[str] = set()

    # --- entries ------------------------------------------------------------
    def entry(self, circuit_id: str) -> SrsEntry:
        with self._lock:
            e = self._entries.get(circuit_id)
            if e is None:
                handler = self.kinds.for_circuit(circuit_id)
                d = self.cache_dir / DEV_KEY_DIR / circuit_id
                e = SrsEntry(circuit_id, handler, d)
                if (d / "meta.json").exists():
                    e.size_bytes = key_dir_bytes(d)
                self._entries[circuit_id] = e
            return e

    def discover_cached(self) -> None:
        """List keys already in the cache (COLD) so that status reports them."""
        root = self.cache_dir / DEV_KEY_DIR
        if not root.is_dir():
            return
        for d in sorted(root.iterdir()):
            if (d / "meta.json").exists():
                try:
                    self.entry(d.name)
                except InputError:
                    log.info("key cache holds %s, which no registered kind owns", d.name)

    def ensure_r1cs(self, circuit_id: str, cancelled: Any = None) -> None:
        """Make the circuit's matrices available, building them at most once and
        within the host budget (the build of a 32GiB circuit's takes 30-60 GiB;
        once cached they are mapped from disk and count nowhere)."""
        if circuit_id in self._r1cs_ready:
            return
        e = self.entry(circuit_id)
        with self._lock:
            lock = self._r1cs_locks.setdefault(circuit_id, threading.Lock())
        with lock:
            if circuit_id in self._r1cs_ready:
                return
            need = e.handler.r1cs_build_bytes(circuit_id)
            if need:
                log.info("building the matrices of %s (%.1f GiB)", circuit_id, need / 2**30)
                (res,) = self.host_budget.reserve(
                    [(need, f"matrices of {circuit_id}")],
                    evict=self.evict_idle,
                    cancelled=cancelled,
                )
                try:
                    e.handler.r1cs(circuit_id)
                finally:
                    res.release()
            else:
                e.handler.r1cs(circuit_id)
            self._r1cs_ready.add(circuit_id)

    def _ensure_on_disk(self, e: SrsEntry, cancelled: Any = None) -> None:
        if (e.directory / "meta.json").exists():
            return
        with self._lock:
            gen_lock = self._gen_locks.setdefault(e.circuit_id, threading.Lock())
        with gen_lock:
            if (e.directory / "meta.json").exists():
                return
            if not (e.handler.dev_keys_by_default or self.generate_dev_keys):
                raise ResourceError(
                    f"no proving key for {e.circuit_id} in {self.cache_dir}: place its "
                    f"parameters there, or set [srs] generate_dev_keys = true for an "
                    f"INSECURE development key"
                )
            self.ensure_r1cs(e.circuit_id, cancelled)
            r1cs = e.handler.r1cs(e.circuit_id)
            if self._setup_gpu() is not None:
                a_points, b_points = e.handler.query_sizes(e.circuit_id)
                raw = key_raw_bytes(r1cs.num_constraints, r1cs.num_aux, a_points, b_points)
                need = key_gpu_setup_bytes(r1cs.num_constraints, raw)
            else:
                need = key_host_bytes(r1cs)
            (res,) = self.host_budget.reserve(
                [(need, f"key generation {e.circuit_id}")],
                evict=self.evict_idle,
                cancelled=cancelled,
            )
            try:
                t = time.perf_counter()
                log.warning(
                    "generating an INSECURE development key for %s (%d constraints)",
                    e.circuit_id,
                    r1cs.num_constraints,
                )
                pk = self._dev_setup(r1cs)
                save_key(e.directory, e.circuit_id, pk, r1cs)
                log.info("key %s generated in %.2fs", e.circuit_id, time.perf_counter() - t)
            finally:
                res.release()
            e.size_bytes = key_dir_bytes(e.directory)

    def _setup_gpu(self) -> Device | None:
        """The GPU development keys are made on (the first one), if any."""
        return next((d for d in self.devices.values() if d.backend.name == "cuda"), None)

    def _dev_setup(self, r1cs: R1CS) -> ProvingKey:
        """A development key, its points made on the first GPU when there is one.

        Both paths give a key of the same (single-party, INSECURE) setup; on a
        GPU the fixed-base multiplications take seconds where the CPU takes
        minutes (2KiB PoRep: ~20 min in pure Python).
        """
        gpu = self._setup_gpu()
        if gpu is None:
            return setup.setup(r1cs)
        from cuzk.backends.cuda.msm import MsmEngine
        from cuzk.groth16.setup_gpu import setup_gpu

        with gpu.activate():
            return setup_gpu(r1cs, engine=MsmEngine(gpu.backend.ctx))

    def _ensure_warm(self, e: SrsEntry, cancelled: Any = None) -> ProvingKey:
        self._ensure_on_disk(e, cancelled)
        with self._lock:
            if e.pk is None:
                e.pk = load_key(e.directory)
            return e.pk

    def verifying_key(self, circuit_id: str) -> VerifyingKey:
        e = self.entry(circuit_id)
        return self._ensure_warm(e).vk

    # --- leases -------------------------------------------------------------
    def acquire_host(self, circuit_id: str, working_bytes: int, cancelled: Any = None) -> HostLease:
        """Pin a key and reserve a partition's host working set, atomically.

        Where the devices are host resident (the CPU backend) the key is
        prepared here too, its memory reserved together with the working set.
        """
        e = self.entry(circuit_id)
        t = time.perf_counter()
        with self._lock:
            e.refs += 1
            e.last_used = time.monotonic()
        try:
            pk = self._ensure_warm(e, cancelled)
            host_devices = [d for d in self.devices.values() if d.host_resident]
            if not host_devices:
                (working,) = self.host_budget.reserve(
                    [(working_bytes, f"partition {circuit_id}")],
                    evict=self.evict_idle,
                    cancelled=cancelled,
                )
            else:
                dev = host_devices[0]
                with e.load_lock:
                    if dev.ordinal in e.prepared:
                        (working,) = self.host_budget.reserve(
                            [(working_bytes, f"partition {circuit_id}")],
                            evict=self.evict_idle,
                            cancelled=cancelled,
                        )
                    else:
                        r1cs = e.handler.r1cs(circuit_id)
                        working, key_res = self.host_budget.reserve(
                            [
                                (working_bytes, f"partition {circuit_id}"),
                                (key_host_bytes(r1cs), f"key {circuit_id}"),
                            ],
                            evict=self.evict_idle,
                            cancelled=cancelled,
                        )
                        try:
                            prepared = prover.prepare(pk, r1cs, dev.backend)
                        except BaseException:
                            key_res.release()
                            working.release()
                            raise
                        with self._lock:
                            e.prepared[dev.ordinal] = prepared
                            e.reservations[dev.ordinal] = key_res
        except BaseException:
            with self._lock:
                e.refs -= 1
            raise
        return HostLease(e, working, (time.perf_counter() - t) * 1000)

    def release_host(self, lease: HostLease) -> None:
        lease.working.release()
        with self._lock:
            lease.entry.refs -= 1
            lease.entry.last_used = time.monotonic()

    def acquire_device(
        self, lease: HostLease, device: Device, cancelled: Any = None
    ) -> DeviceLease:
        """The key prepared on ``device`` plus the device working set of one partition."""
        e = lease.entry
        t = time.perf_counter()
        if device.host_resident:
            with self._lock:
                key = e.prepared[device.ordinal]  # prepared by acquire_host
            return DeviceLease(e, device, key, None, 0.0)
        assert device.budget is not None
        r1cs = e.handler.r1cs(e.circuit_id)
        with self._lock:
            e.device_refs[device.ordinal] = e.device_refs.get(device.ordinal, 0) + 1
            lock = e.device_locks.setdefault(device.ordinal, threading.Lock())
        try:
            with lock:
                if device.ordinal in e.prepared:
                    (working,) = device.budget.reserve(
                        [(device.working_bytes(r1cs), f"partition {e.circuit_id}")],
                        evict=lambda n: self.evict_idle(n, device),
                        cancelled=cancelled,
                    )
                else:
                    pk = self._ensure_warm(e, cancelled)
                    working, key_res = device.budget.reserve(
                        [
                            (device.working_bytes(r1cs), f"partition {e.circuit_id}"),
                            (device.key_bytes(pk, r1cs), f"key {e.circuit_id}"),
                        ],
                        evict=lambda n: self.evict_idle(n, device),
                        cancelled=cancelled,
                    )
                    try:
                        # preload may run on any thread; the backend's holds for the
                        # key's bases and matrices come out of the key's reservation
                        with device.activate(), device.budget.lend(key_res):
                            prepared = prover.prepare(pk, r1cs, device.backend)
                    except BaseException:
                        key_res.release()
                        working.release()
                        raise
                    with self._lock:
                        e.prepared[device.ordinal] = prepared
                        e.reservations[device.ordinal] = key_res
                with self._lock:
                    key = e.prepared[device.ordinal]
        except BaseException:
            with self._lock:
                e.device_refs[device.ordinal] -= 1
            raise
        return DeviceLease(e, device, key, working, (time.perf_counter() - t) * 1000)

    def release_device(self, lease: DeviceLease) -> None:
        if lease.working is None:
            return
        lease.working.release()
        with self._lock:
            lease.entry.device_refs[lease.device.ordinal] -= 1

    # --- eviction -------------------------------------------------------------
    def _evictable(self, e: SrsEntry, ordinal: int, now: float, respect_idle: bool) -> bool:
        if ordinal not in e.prepared:
            return False
        dev = self.devices[ordinal]
        in_use = e.refs > 0 if dev.host_resident else e.device_refs.get(ordinal, 0) > 0
        if in_use:
            return False
        return not respect_idle or now - e.last_used >= self.eviction_min_idle

    def _drop(self, e: SrsEntry, ordinal: int) -> int:
        """Called with the manager lock held."""
        prepared = e.prepared.pop(ordinal, None)
        if prepared is not None:
            prepared.close()  # the backend's memory (and holds) for it, before its reservation
        res = e.reservations.pop(ordinal, None)
        if res is None:
            return 0
        res.release()
        return res.nbytes

    def evict_idle(self, shortfall: int, device: Device | None = None) -> bool:
        """Evict least-recently-used idle HOT keys from a budget until ``shortfall`` is freed.

        ``device`` None means the host budget (keys of host-resident devices).
        """
        now = time.monotonic()
        freed = 0
        with self._lock:
            if device is None:
                ordinals = [d.ordinal for d in self.devices.values() if d.host_resident]
            else:
                ordinals = [device.ordinal]
            candidates = sorted(
                (
                    (e.last_used, e, o)
                    for e in self._entries.values()
                    for o in ordinals
                    if self._evictable(e, o, now, respect_idle=True)
                ),
                key=lambda t: t[0],
            )
            for _, e, o in candidates:
                if freed >= shortfall:
                    break
                n = self._drop(e, o)
                freed += n
                log.info(
                    "evicted key %s from %s (%d bytes) under memory pressure",
                    e.circuit_id,
                    self.devices[o].label,
                    n,
                )
        return freed > 0

    def evict(self, circuit_id: str) -> tuple[bool, int]:
        """EvictSRS: HOT → WARM (or WARM → COLD). Returns (was_loaded, freed_bytes).

        Raises InUse while proofs use the key.
        """
        e = self.entry(circuit_id)
        with self._lock:
            busy = e.refs + sum(e.device_refs.values())
            if busy:
                raise InUse(
                    f"key {circuit_id} is in use by {busy} partition(s) in flight; "
                    f"evict it when they finish"
                )
            if e.prepared:
                freed = sum(self._drop(e, o) for o in list(e.prepared))
                return True, freed
            e.pk = None  # the memory map goes with its arrays
            return False, 0

    # --- preload ------------------------------------------------------------
    def preload(self, circuit_id: str) -> tuple[bool, float]:
        """PreloadSRS: make a key HOT on every device. Returns (already_loaded, ms)."""
        e = self.entry(circuit_id)
        with self._lock:
            if e.prepared and all(o in e.prepared for o in self.devices):
                e.last_used = time.monotonic()
                return True, 0.0
        t = time.perf_counter()
        lease = self.acquire_host(circuit_id, 0)
        try:
            for dev in self.devices.values():
                if not dev.host_resident:
                    self.release_device(self.acquire_device(lease, dev))
        finally:
            self.release_host(lease)
        return False, (time.perf_counter() - t) * 1000

    # --- reporting ------------------------------------------------------------
    def status(self) -> list[SrsStatus]:
        now = time.monotonic()
        with self._lock:
            return [
                SrsStatus(
                    circuit_id=e.circuit_id,
                    tier=e.tier,
                    size_bytes=e.size_bytes,
                    ref_count=e.refs,
                    devices=tuple(sorted(e.prepared)),
                    idle_s=(now - e.last_used) if e.last_used else 0.0,
                )
                for e in sorted(self._entries.values(), key=lambda x: x.circuit_id)
            ]
