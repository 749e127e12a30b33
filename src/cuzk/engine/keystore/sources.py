"""Where a key comes from: its parameter files, found and checked, or a
development key written as files (or made straight into a GPU's memory).

:class:`KeySources` is the part of :class:`cuzk.engine.keystore.KeyStore`
that makes a key available (WARM: its files opened, or a file-less
development key decided on) and hands a device the source it loads from;
the store's entries, locks, budgets and eviction are the store's own
(``_lock``, ``_gen_locks``, ``entry``, ``ensure_r1cs``, ``evict_idle``,
``let_go``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from cuzk.circuits.parameters import file_digest
from cuzk.engine.devices import Device
from cuzk.engine.keystore.devcache import dev_key_bytes, managed
from cuzk.engine.keystore.devfiles import (
    dev_setup_host_bytes,
    disk_free,
    gpu_points,
    params_file_bytes,
    write_dev_params,
)
from cuzk.engine.keystore.entry import KeyEntry, source_point_bytes
from cuzk.engine.keystore.progress import ProgressLog
from cuzk.engine.kinds.base import KeyFiles
from cuzk.errors import InputError, ResourceError
from cuzk.formats.bellperson import MappedParams, open_params
from cuzk.groth16 import prover
from cuzk.groth16.keys import KeySource, VerifyingKey
from cuzk.groth16.setup import DevParams, ToxicWaste

log = logging.getLogger(__name__)


class KeySources:
    """Finding, opening and making keys (the store's attributes: see the module doc)."""

    def _find(self, files: KeyFiles) -> Path | None:
        for d in self.search_dirs:
            p = d / files.params
            if p.is_file():
                return p
        return None

    def _dev_allowed(self, e: KeyEntry) -> bool:
        return e.handler.dev_keys_by_default or self.generate_dev_keys

    def _ensure_available(self, e: KeyEntry, cancelled: Any = None) -> None:
        """The key exists: its files found (and opened: WARM), or written as a
        development key's files, or a file-less development key decided on."""
        if e.source is not None or e.dev_waste is not None:
            return
        with self._lock:
            gen_lock = self._gen_locks.setdefault(e.circuit_id, threading.Lock())
        with gen_lock:
            if e.source is not None or e.dev_waste is not None:
                return
            path = self._find(e.files)
            if path is None:
                if not self._dev_allowed(e):
                    dirs = ", ".join(str(d) for d in self.search_dirs)
                    raise ResourceError(
                        f"no parameters for {e.circuit_id}: {e.files.params} (with "
                        f"{e.files.vk}) is in none of {dirs}; fetch Filecoin's parameters "
                        f"into one of them, or set [srs] generate_dev_keys = true for "
                        f"INSECURE development keys"
                    )
                path = self._generate(e, cancelled)
                if path is None:  # made in GPU memory when a device loads it
                    return
            source = self._open(e, path)
            with self._lock:
                e.source = source
                e.vk = source.vk

    def _source(
        self, e: KeyEntry, cancelled: Any = None, device: Device | None = None
    ) -> KeySource:
        """What a device loads the key from: its opened files, or a file-less
        development key made for the loads under way (its scalars live until the
        last of them calls :meth:`_loaded`: two GPUs loading it at once share them)."""
        self._ensure_available(e, cancelled)
        with self._lock:
            if e.source is not None:
                return self._use(e, e.source)
            gen_lock = self._gen_locks.setdefault(e.circuit_id, threading.Lock())
        with gen_lock:  # one generator (and one host reservation) at a time
            with self._lock:
                if e.source is not None:
                    return self._use(e, e.source)
            source = self._dev_source(e, cancelled, device)
            with self._lock:
                e.source = source
                e.vk = source.vk
                return self._use(e, source)

    @staticmethod
    def _use(e: KeyEntry, source: KeySource) -> KeySource:
        """Called with the manager lock held: one more load of a development key."""
        if isinstance(source, DevParams):
            e.dev_users += 1
        return source

    def _device_source(self, e: KeyEntry, source: KeySource, device: Device) -> KeySource:
        """The source as ``device`` loads it: a file-less development key's points
        are made on the GPU that loads them (the scalars are shared)."""
        if (
            isinstance(source, DevParams)
            and device.backend.name == "cuda"
            and e.dev_points_on != device.ordinal
        ):
            return source.with_points(gpu_points(device))
        return source

    def _open(self, e: KeyEntry, path: Path) -> MappedParams:
        vk_path = path.with_name(e.files.vk)
        if not vk_path.is_file():
            raise InputError(
                str(path),
                "",
                f"its verifying key {e.files.vk} is not beside it: every proof is verified "
                "against the key its parameters came with (fetch both files)",
            )
        params = open_params(path, vk_path)
        development = True
        if e.files.published:
            digest = file_digest(vk_path)
            development = digest != e.files.published_vk_digest
            if development and not self.generate_dev_keys:
                raise InputError(
                    str(vk_path),
                    "digest",
                    f"{digest} is not the digest of Filecoin's published {e.files.vk} "
                    f"({e.files.published_vk_digest}): these are not Filecoin's parameters "
                    "and the chain would reject every proof made with them; fetch the "
                    "published files, or set [srs] generate_dev_keys = true to prove with "
                    "development keys (INSECURE)",
                )
        if development:
            log.warning("%s: INSECURE development key (%s)", e.circuit_id, path)
        else:
            log.info("%s: Filecoin's published parameters (%s)", e.circuit_id, path)
        with self._lock:
            e.path = path
            e.size_bytes = params.size
            e.development = development
        return params

    def _setup_gpu(self) -> Device | None:
        """The GPU development keys are made on (the first one), if any."""
        return next((d for d in self.devices.values() if d.backend.name == "cuda"), None)

    def _dev_points(self) -> Any:
        gpu = self._setup_gpu()
        return None if gpu is None else gpu_points(gpu)

    def _generate(self, e: KeyEntry, cancelled: Any) -> Path | None:
        """Write a development key as files in the cache folder; None when they
        would not fit its disk and a GPU can take the key straight instead."""
        self.ensure_r1cs(e.circuit_id, cancelled)
        r1cs = e.handler.r1cs(e.circuit_id)
        layout = prover.KeyLayout.of(r1cs)
        if managed(e.files):  # a demo size's key: within [srs] dev_key_disk_budget
            self.dev_keys.make_room(e.files, dev_key_bytes(layout.counts), self.let_go)
        need_disk = params_file_bytes(layout.counts) + (64 << 20)
        if disk_free(self.cache_dir) < need_disk:
            if self._setup_gpu() is None:
                raise ResourceError(
                    f"the development key of {e.circuit_id} needs "
                    f"{need_disk / 2**30:.1f} GiB on disk, {self.cache_dir} has "
                    f"{disk_free(self.cache_dir) / 2**30:.1f} GiB free, and there is no GPU "
                    "to make them in memory instead"
                )
            log.warning(
                "%s: the development key (%.1f GiB) does not fit the disk of %s; the key "
                "is made straight into GPU memory instead (no file)",
                e.circuit_id,
                need_disk / 2**30,
                self.cache_dir,
            )
            e.dev_waste = ToxicWaste.draw()
            return None
        (res,) = self.host_budget.reserve(
            [(dev_setup_host_bytes(r1cs.num_constraints), f"key generation {e.circuit_id}")],
            evict=self.evict_idle,
            cancelled=cancelled,
        )
        try:
            return write_dev_params(r1cs, e.files, self.cache_dir, points=self._dev_points())
        finally:
            res.release()

    def _dev_source(self, e: KeyEntry, cancelled: Any, device: Device | None) -> DevParams:
        """A file-less development key, made as a device loads it (same waste each
        time), its points on that device when it is a GPU (else on the first GPU)."""
        gpu = device if device is not None and device.backend.name == "cuda" else None
        gpu = gpu or self._setup_gpu()
        r1cs = e.handler.r1cs(e.circuit_id)
        (res,) = self.host_budget.reserve(
            [(dev_setup_host_bytes(r1cs.num_constraints), f"key generation {e.circuit_id}")],
            evict=self.evict_idle,
            cancelled=cancelled,
        )
        try:
            source = DevParams(
                r1cs,
                waste=e.dev_waste,
                points=None if gpu is None else gpu_points(gpu),
                name=f"development key {e.circuit_id} (in memory)",
            )
        except BaseException:
            res.release()
            raise
        with self._lock:
            e.development = True
            e.size_bytes = source_point_bytes(source)
            e.dev_reservation = res  # given back once the key is loaded (_loaded)
            e.dev_points_on = None if gpu is None else gpu.ordinal
        return source

    def _loaded(self, e: KeyEntry, source: KeySource | None) -> None:
        """After a device has taken the key from ``source`` (None: it never got
        one): the last load of a file-less development key gives its scalars (and
        their host reservation) back; it is made again if needed."""
        if not isinstance(source, DevParams):
            return
        with self._lock:
            e.dev_users -= 1
            if e.dev_users > 0 or e.source is not source:
                return
            e.source = None
            res, e.dev_reservation = e.dev_reservation, None
        if res is not None:
            res.release()

    def _forget(self, e: KeyEntry) -> None:
        """After a failed load: the files are opened afresh next time (the operator
        may replace a damaged file while the daemon runs)."""
        with self._lock:
            if isinstance(e.source, MappedParams):
                e.source = None
                e.vk = None
                e.path = None

    def verifying_key(self, circuit_id: str) -> VerifyingKey:
        e = self.entry(circuit_id)
        if e.vk is not None:
            return e.vk
        source = self._source(e)
        vk = source.vk
        self._loaded(e, source)
        return vk

    def _progress(self, e: KeyEntry, device: Device) -> ProgressLog:
        return ProgressLog(f"loading {e.circuit_id} into {device.label}")
