"""The key store: proving keys per circuit id, in tiers, within the budgets.

Tiers (the values of cuzk.v1.SRSStatus.Tier):

- HOT: prepared on a device: for the CPU backend the key's points in the
  native kernels' form in host memory, for a GPU the key loaded into its
  VRAM; counted in the host or that device's budget.
- WARM: the key's files opened (verifying key decoded, sections located;
  nothing else read), or a development key that exists only as a generator.
- COLD: on disk only.

Keys in use are pinned by reference counts and never evicted; idle HOT keys
are evicted least recently used first when a budget is short, once idle for
``eviction_min_idle``. EvictSRS drops a key from HOT to WARM (or WARM to
COLD) and is refused while proofs use it.

Keys are bellperson ``.params`` files with their ``.vk``, named as
rust-fil-proofs names them (:class:`cuzk.engine.kinds.base.KeyFiles`) and
looked up in ``[srs]``'s search folders (``param_cache``,
``$FIL_PROOFS_PARAMETER_CACHE``, /var/tmp/filecoin-proof-parameters). A key
is streamed from its file into a device (:func:`cuzk.groth16.prover.load`),
a chunk at a time: it is never whole in host memory on the way. A Filecoin
circuit's ``.vk`` is compared with the published digest: files that are not
Filecoin's (development keys under the same names) are used only when
``[srs] generate_dev_keys`` allows development keys, and are reported so.

Development keys (a single-party setup: INSECURE, for the demo kind and,
when ``generate_dev_keys`` says so, for Filecoin kinds) are generated on
first use as files of the same format under the same names
(:mod:`cuzk.engine.keystore.devfiles`), so they take the same path; where the file
would not fit the disk and a GPU is present, the key is made straight into
that GPU's memory instead (no file; still never whole on the host).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cuzk.engine.budget import Budget, Cancelled, Reservation, is_time_critical
from cuzk.engine.devices import Device
from cuzk.engine.jobs import InUse, Priority
from cuzk.engine.keystore import residency
from cuzk.engine.keystore.devcache import DevKeyCache
from cuzk.engine.keystore.entry import (
    DEV_POINTS_DEVICE_BYTES,
    DeviceLease,
    HostLease,
    KeyEntry,
    KeyStatus,
)
from cuzk.engine.keystore.residency import Residency
from cuzk.engine.keystore.sources import KeySources
from cuzk.engine.kinds import KindRegistry
from cuzk.engine.kinds.base import key_host_bytes, key_raw_bytes
from cuzk.formats.bellperson import MappedParams
from cuzk.groth16 import prover

log = logging.getLogger(__name__)


class KeyStore(KeySources):
    def __init__(
        self,
        cache_dir: Path,
        kinds: KindRegistry,
        host_budget: Budget,
        devices: list[Device],
        eviction_min_idle: float = 300.0,
        generate_dev_keys: bool = False,
        search_dirs: list[Path] | None = None,
        dev_key_disk_budget: int = 2 << 30,
        shared_pass_partitions: int = 0,
    ) -> None:
        """``cache_dir``: where generated keys are written (searched first);
        ``search_dirs``: the folders searched after it (see SrsConfig.search_dirs);
        ``dev_key_disk_budget``: the disk the development keys of demo sizes may take
        there (:mod:`cuzk.engine.keystore.devcache`); ``shared_pass_partitions``:
        ``[gpus] shared_pass_partitions``, by which a lean tier's resident parts
        are chosen (:func:`cuzk.engine.keystore.residency.plan`'s ``group``)."""
        self.cache_dir = Path(cache_dir)
        dirs = [self.cache_dir] + [Path(d) for d in (search_dirs or [])]
        self.search_dirs = list(dict.fromkeys(dirs))
        self.kinds = kinds
        self.host_budget = host_budget
        self.devices = {d.ordinal: d for d in devices}
        self.eviction_min_idle = eviction_min_idle
        self.generate_dev_keys = generate_dev_keys
        self._entries: dict[str, KeyEntry] = {}
        self._lock = threading.RLock()
        self._gen_locks: dict[str, threading.Lock] = {}
        # per device: held by the one partition that may work on a witness share
        self._share_slots: dict[int, threading.Lock] = {}
        self._r1cs_locks: dict[str, threading.Lock] = {}
        self._r1cs_ready: set[str] = set()
        self.dev_keys = DevKeyCache(self.cache_dir, dev_key_disk_budget)
        self.shared_pass_partitions = shared_pass_partitions

    # --- entries ------------------------------------------------------------
    def entry(self, circuit_id: str) -> KeyEntry:
        with self._lock:
            e = self._entries.get(circuit_id)
            if e is None:
                handler = self.kinds.for_circuit(circuit_id)
                e = KeyEntry(circuit_id, handler, handler.key_files(circuit_id))
                e.path = self._find(e.files)
                if e.path is not None:
                    e.size_bytes = e.path.stat().st_size
                self._entries[circuit_id] = e
            return e

    def discover_cached(self) -> None:
        """List the keys present in the search folders (COLD) so that status reports them."""
        for d in self.search_dirs:
            if not d.is_dir():
                continue
            for p in sorted(d.glob("*.params")):
                cid = self.kinds.circuit_for_key_file(p.name)
                if cid is not None:
                    self.entry(cid)
        self.dev_keys.make_room(None, 0, self.let_go)  # an older daemon kept every one

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

    # --- leases -------------------------------------------------------------
    def acquire_host(self, circuit_id: str, working_bytes: int, cancelled: Any = None) -> HostLease:
        """Pin a key and reserve a partition's host working set, atomically.

        Where the devices are host resident (the CPU backend) the key is
        prepared here too, its memory reserved together with the working set.
        """
        t = time.perf_counter()
        with self._lock:  # one step: let_go never drops an entry between the two
            e = self.entry(circuit_id)
            e.refs += 1
            e.last_used = time.monotonic()
        self.dev_keys.used(e.files)
        try:
            self._ensure_available(e, cancelled)
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
                        source = None
                        try:
                            source = self._source(e, cancelled)
                            prepared = prover.load(
                                source, r1cs, dev.backend, self._progress(e, dev)
                            )
                        except BaseException:
                            key_res.release()
                            working.release()
                            self._forget(e)
                            raise
                        finally:
                            self._loaded(e, source)
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
        self,
        lease: HostLease,
        device: Device,
        cancelled: Any = None,
        extra: int = 0,
        witness_bytes: int = 0,
    ) -> DeviceLease:
        """The key prepared on ``device`` plus the device working set of one
        partition (and ``extra`` bytes of it: a witness made on the device).

        With ``witness_bytes`` (the assignment a device witness makes), the
        witness's share (``witness_bytes + extra``) is taken alone when it fits:
        the partition makes its witness while others prove, then takes the rest
        of its set (``DeviceLease.rest``, :meth:`reserve_rest`) to prove. One
        partition of a device holds a share at a time (a second waits until the
        first has its rest); the others hold whole sets and wait on nothing, so
        the rest comes once they finish (a whole set fits the device, or none
        would): no two partitions wait on each other. When the share does not
        fit, the whole set is taken at once, as without it."""
        e = lease.entry
        t = time.perf_counter()
        if device.host_resident:
            with self._lock:
                key = e.prepared[device.ordinal]  # prepared by acquire_host
            return DeviceLease(e, device, key, None, 0.0)
        assert device.budget is not None
        with self._lock:
            e.device_refs[device.ordinal] = e.device_refs.get(device.ordinal, 0) + 1
            lock = e.device_locks.setdefault(device.ordinal, threading.Lock())
        try:
            res = self.residency(e, device)
            with lock:
                if device.ordinal in e.prepared:
                    whole = res.partition_device_bytes + extra
                    first = witness_bytes + extra
                    share = None
                    # (time-critical work takes its whole set: the share slot may be
                    # held by a PoRep partition waiting for another to finish)
                    if 0 < witness_bytes < whole - extra and not is_time_critical():
                        share = self._take_share(device, first, e.circuit_id, cancelled)
                    if share is not None:
                        (working, slot), rest = share, whole - first
                    else:
                        (working,) = device.budget.reserve(
                            [(whole, f"partition {e.circuit_id}")],
                            evict=lambda n: self.evict_idle(n, device),
                            cancelled=cancelled,
                        )
                        rest, slot = 0, None
                else:
                    self._ensure_available(e, cancelled)
                    working, rest, slot = self._load(e, device, res, extra, cancelled), 0, None
                with self._lock:
                    key = e.prepared[device.ordinal]
        except BaseException:
            with self._lock:
                e.device_refs[device.ordinal] -= 1
            raise
        ms = (time.perf_counter() - t) * 1000
        return DeviceLease(e, device, key, working, ms, rest, slot, res)

    def residency(self, e: KeyEntry, device: Device) -> Residency:
        """Where ``e``'s key and its partitions live on ``device`` (planned once)."""
        with self._lock:
            got = e.residency.get(device.ordinal)
        if got is None:
            got = _plan_on(device, e, self.shared_pass_partitions)
            log.info("%s on %s: %s", e.circuit_id, device.label, got.describe())
            with self._lock:
                e.residency[device.ordinal] = got
        return got

    def _load(
        self, e: KeyEntry, device: Device, res: Residency, extra: int, cancelled: Any
    ) -> Reservation:
        """Load ``e``'s key onto ``device`` as its residency ``res`` says, within
        one reservation of the key and a partition's working set: the load's
        temporaries come out of the partition's room, which is split off for
        the partition once the key is in. Returns the partition's reservation."""
        assert device.budget is not None
        r1cs = e.handler.r1cs(e.circuit_id)
        # a file-less development key's points are made on this device as it loads
        made = DEV_POINTS_DEVICE_BYTES if e.dev_waste is not None else 0
        partition = res.partition_device_bytes + extra
        room = max(partition, res.key_load_bytes + made)
        # the streamed parts' pinned copy is host memory for as long as the key
        pinned = None
        if res.key_pinned_bytes:
            (pinned,) = self.host_budget.reserve(
                [(res.key_pinned_bytes, f"key {e.circuit_id} (pinned for {device.label})")],
                evict=self.evict_idle,
                cancelled=cancelled,
            )
        try:
            (both,) = device.budget.reserve(
                [(res.key_device_bytes + room, f"key {e.circuit_id}")],
                evict=lambda n: self.evict_idle(n, device),
                cancelled=cancelled,
            )
        except BaseException:
            if pinned is not None:
                pinned.release()
            raise
        source = None
        try:
            source = self._source(e, cancelled, device)
            # preload may run on any thread; the backend's holds for the key's
            # bases and matrices come out of the key's reservation
            with device.activate(), device.budget.lend(both):
                prepared = prover.load(
                    self._device_source(e, source, device),
                    r1cs,
                    device.backend,
                    self._progress(e, device),
                    resident=res.placement() if device.backend.memory_model else None,
                )
        except BaseException:
            both.release()
            if pinned is not None:
                pinned.release()
            self._forget(e)
            raise
        finally:
            self._loaded(e, source)
        if pinned is not None:
            with self._lock:
                e.pinned[device.ordinal] = pinned
        # The matrices are on the device (or pinned for it) now: the key proves
        # with them (prove(key, None, …)) and lets go of the host's, and the kind
        # drops its mapping of them, whose pages the upload read (the next
        # r1cs() maps the cache file again; its checks read it a chunk at a time
        # and release each: sparse.released_spans).
        prepared.r1cs = None
        del r1cs
        e.handler.forget_r1cs(e.circuit_id)
        fits = both.unused() >= partition
        working = both.split(partition, f"partition {e.circuit_id}") if fits else None
        # the load's room beyond a partition and the key's estimate is given back
        # (all of it when the key holds more than its estimate)
        spare = min(both.unused(), both.nbytes - res.key_device_bytes) if fits else both.unused()
        if spare > 0:
            both.split(spare, f"key {e.circuit_id} (spare)").release()
        with self._lock:
            e.prepared[device.ordinal] = prepared
            e.reservations[device.ordinal] = both
        if working is not None:
            return working
        log.warning(
            "key %s on %s holds %.3f GiB beyond its estimate: the partition waits for room",
            e.circuit_id,
            device.label,
            (both.nbytes - res.key_device_bytes) / 2**30,
        )
        (working,) = device.budget.reserve(
            [(partition, f"partition {e.circuit_id}")],
            evict=lambda n: self.evict_idle(n, device),
            cancelled=cancelled,
        )
        return working

    def _take_share(
        self, device: Device, first: int, circuit_id: str, cancelled: Any = None
    ) -> tuple[Reservation, threading.Lock] | None:
        """The device's share slot and ``first`` bytes, or None when the share
        does not fit now. While another partition holds the slot (its witness,
        then its wait for the rest of its set) this waits for it: that partition
        goes first, and this one may then take the share beside it."""
        assert device.budget is not None
        with self._lock:
            slot = self._share_slots.setdefault(device.ordinal, threading.Lock())
        while not slot.acquire(timeout=0.25):
            if cancelled is not None and cancelled():
                raise Cancelled("cancelled while waiting for memory")
        got = device.budget.try_reserve([(first, f"partition {circuit_id} witness")])
        if got is None:
            slot.release()
            return None
        return got[0], slot

    def reserve_rest(self, lease: DeviceLease, cancelled: Any = None) -> Reservation | None:
        """The rest of a partition's working set (``lease.rest``), waiting for it
        (idle keys are evicted first); None when the lease holds it all."""
        if not lease.rest:
            return None
        device = lease.device
        assert device.budget is not None
        try:
            (res,) = device.budget.reserve(
                [(lease.rest, f"partition {lease.entry.circuit_id}")],
                evict=lambda n: self.evict_idle(n, device),
                cancelled=cancelled,
            )
        finally:
            lease.give_slot()  # the next partition's witness may take a share
        return res

    def release_device(self, lease: DeviceLease) -> None:
        lease.give_slot()
        if lease.working is None:
            return
        lease.working.release()
        with self._lock:
            lease.entry.device_refs[lease.device.ordinal] -= 1

    # --- per device -----------------------------------------------------------
    def placed_by_device(self) -> dict[int, frozenset[str]]:
        """Per device, the circuits whose key is resident there or being loaded
        there (a partition holds a lease on it): what placement calls holding a key."""
        with self._lock:
            out: dict[int, set[str]] = {o: set() for o in self.devices}
            for e in self._entries.values():
                for o in e.prepared:
                    out.setdefault(o, set()).add(e.circuit_id)
                for o, n in e.device_refs.items():
                    if n > 0:
                        out.setdefault(o, set()).add(e.circuit_id)
            return {o: frozenset(c) for o, c in out.items()}

    def drop_device(self, device: Device) -> int:
        """Drop every key resident on ``device`` that no partition uses there (the
        device failed: nothing it held is trusted; a key still in use there is
        dropped by a later call). Returns the bytes given back to its budget."""
        freed = 0
        with self._lock:
            for e in self._entries.values():
                if device.ordinal not in e.prepared:
                    continue
                in_use = e.refs if device.host_resident else e.device_refs.get(device.ordinal, 0)
                if in_use:
                    continue
                res = e.reservations.get(device.ordinal)
                try:
                    freed += self._drop(e, device.ordinal)
                except Exception as err:  # _drop released the budgets all the same
                    log.warning("dropping key %s from %s: %s", e.circuit_id, device.label, err)
                    freed += 0 if res is None else res.nbytes
                log.info("dropped key %s from %s (device failed)", e.circuit_id, device.label)
        return freed

    # --- eviction -------------------------------------------------------------
    def let_go(self, circuit_id: str) -> bool:
        """Forget an idle key entirely (evicted from every device, files closed) so
        that its files may be deleted; False while a proof uses it. The next use
        finds, or makes, its files afresh."""
        with self._lock:
            e = self._entries.get(circuit_id)
            if e is None:
                return True
            if e.refs or any(e.device_refs.values()) or e.dev_reservation is not None:
                return False
            for ordinal in list(e.prepared):
                self._drop(e, ordinal)
            del self._entries[circuit_id]
            return True

    @staticmethod
    def time_critical(e: KeyEntry) -> bool:
        """A key of a time-critical kind (WinningPoSt, WindowPoSt: HIGH or CRITICAL
        by default): memory pressure evicts it only for time-critical work."""
        return Priority.default_for(e.handler.kind) >= Priority.HIGH

    def _evictable(
        self, e: KeyEntry, ordinal: int, now: float, respect_idle: bool, spare: bool = False
    ) -> bool:
        if ordinal not in e.prepared:
            return False
        if spare and self.time_critical(e):
            return False  # not evicted for PoRep or SnapDeals
        dev = self.devices[ordinal]
        in_use = e.refs > 0 if dev.host_resident else e.device_refs.get(ordinal, 0) > 0
        if in_use:
            return False
        return not respect_idle or now - e.last_used >= self.eviction_min_idle

    def _drop(self, e: KeyEntry, ordinal: int) -> int:
        """Called with the manager lock held."""
        prepared = e.prepared.pop(ordinal, None)
        pinned = e.pinned.pop(ordinal, None)
        res = e.reservations.pop(ordinal, None)
        try:
            if prepared is not None:
                prepared.close()  # the backend's memory (and holds) for it, before its reservation
        finally:  # a lost device may fail to free: its budgets still do
            if pinned is not None:
                pinned.release()
            if res is not None:
                res.release()
        return 0 if res is None else res.nbytes

    def evict_idle(self, shortfall: int, device: Device | None = None) -> bool:
        """Evict least-recently-used idle HOT keys from a budget until ``shortfall`` is freed.

        ``device`` None means the host budget (keys of host-resident devices).
        Keys of time-critical kinds are evicted only for time-critical work
        (:func:`cuzk.engine.budget.time_critical`), or for a reservation that
        could never fit beside them (it would wait for ever: a warning says so).
        """
        now = time.monotonic()
        freed = 0
        with self._lock:
            if device is None:
                ordinals = [d.ordinal for d in self.devices.values() if d.host_resident]
            else:
                ordinals = [device.ordinal]
            budget = self.host_budget if device is None else device.budget
            spare = not is_time_critical() and not self._blocked(shortfall, budget, ordinals)
            candidates = sorted(
                (
                    (e.last_used, e, o)
                    for e in self._entries.values()
                    for o in ordinals
                    if self._evictable(e, o, now, respect_idle=True, spare=spare)
                ),
                key=lambda t: t[0],
            )
            for _, e, o in candidates:
                if freed >= shortfall:
                    break
                n = self._drop(e, o)
                freed += n
                log.log(
                    logging.WARNING
                    if self.time_critical(e) and not is_time_critical()
                    else logging.INFO,
                    "evicted key %s from %s (%d bytes) under memory pressure%s",
                    e.circuit_id,
                    self.devices[o].label,
                    n,
                    " (a time-critical key: other work could never fit beside it)"
                    if self.time_critical(e) and not is_time_critical()
                    else "",
                )
        return freed > 0

    def _blocked(self, shortfall: int, budget: Budget | None, ordinals: list[int]) -> bool:
        """Whether a reservation ``shortfall`` bytes short could never fit beside
        the time-critical keys on ``ordinals`` (more than the budget, less its
        kept slice, less those keys): then they may be evicted for it. Called
        with the lock held."""
        if budget is None:
            return False
        held = sum(
            r.nbytes
            for e in self._entries.values()
            if self.time_critical(e)
            for o in ordinals
            if (r := e.reservations.get(o)) is not None
        )
        ceiling = budget.limit - budget.kept
        wanted = shortfall + max(0, budget.available())
        return held > 0 and wanted + held > ceiling

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
            if isinstance(e.source, MappedParams):
                e.source = None  # WARM → COLD: the files are opened again when needed
            return False, 0

    # --- preload ------------------------------------------------------------
    def preload(self, circuit_id: str, ordinals: list[int] | None = None) -> tuple[bool, float]:
        """PreloadSRS: make a key HOT on every device (those of ``ordinals`` when
        given: the healthy ones). Returns (already_loaded, ms)."""
        e = self.entry(circuit_id)
        targets = [o for o in self.devices if ordinals is None or o in ordinals]
        with self._lock:
            if e.prepared and all(o in e.prepared for o in targets):
                e.last_used = time.monotonic()
                return True, 0.0
        t = time.perf_counter()
        lease = self.acquire_host(circuit_id, 0)
        gpus = [self.devices[o] for o in targets if not self.devices[o].host_resident]
        try:
            # every GPU loads at once (its own copy, from the same file or scalars)
            with ThreadPoolExecutor(max_workers=max(1, len(gpus))) as pool:
                loads = [pool.submit(self.acquire_device, lease, dev) for dev in gpus]
                errors = []
                for f in loads:
                    try:
                        self.release_device(f.result())
                    except BaseException as err:
                        errors.append(err)
            if errors:
                raise errors[0]
        finally:
            self.release_host(lease)
        return False, (time.perf_counter() - t) * 1000

    # --- reporting ------------------------------------------------------------
    def status(self) -> list[KeyStatus]:
        now = time.monotonic()
        with self._lock:
            return [
                KeyStatus(
                    circuit_id=e.circuit_id,
                    tier=e.tier,
                    size_bytes=e.size_bytes,
                    ref_count=e.refs,
                    devices=tuple(sorted(e.prepared)),
                    idle_s=(now - e.last_used) if e.last_used else 0.0,
                    file=str(e.path) if e.path is not None else "",
                    development=e.development,
                    device_bytes={o: r.nbytes for o, r in sorted(e.reservations.items())},
                )
                for e in sorted(self._entries.values(), key=lambda x: x.circuit_id)
            ]


def _plan_on(device: Device, e: KeyEntry, shared_pass_partitions: int = 0) -> Residency:
    """The residency of ``e``'s key on a device with a budget, planned by its
    backend's memory model (``Backend.memory_model``: the CUDA backend's),
    its resident parts ranked with the passes over L, A and B shared by
    ``shared_pass_partitions`` (``[gpus]``; a kind whose jobs are not batched,
    the PoSts of a partition a request, never shares: 1);
    a backend without one (the CPU stand-ins of the tests) keeps every part
    resident with whole partitions, by its own models of a prepared key and
    a proof."""
    assert device.budget is not None
    counts = e.handler.counts(e.circuit_id)
    model = device.backend.memory_model
    if model is not None:
        group = shared_pass_partitions if e.handler.batchable else 1
        return residency.plan(counts, device.budget.limit, model, witness_bytes=0, group=group)
    r1cs = e.handler.r1cs(e.circuit_id)
    raw = key_raw_bytes(counts.num_constraints, counts.num_aux, counts.a_points, counts.b_points)
    key = device.key_bytes(raw, r1cs)
    partition = device.working_bytes(r1cs)
    spare = device.budget.limit - key
    return Residency(
        budget=device.budget.limit,
        tier="resident" if spare >= partition else "none",
        resident=frozenset((*residency.QUERIES, *residency.MATRICES)),
        lean=False,
        fork_share=0,
        key_device_bytes=key,
        key_load_bytes=0,
        key_pinned_bytes=0,
        partition_device_bytes=partition,
        in_flight=max(0, spare // max(1, partition)),
    )
