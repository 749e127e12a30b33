"""Development keys of demo sizes on disk, within a budget, least recently used out.

Every demo size a client asks for (``demo-r<R>-w<W>``) makes its own
development key, written as ``cuzk-dev-demo-r<R>-w<W>.params`` and ``.vk`` in
``[srs] param_cache`` (:class:`cuzk.engine.kinds.base.KeyFiles`). Unbounded,
a client walking through sizes fills the disk (issue 15). The keys under
development names (``cuzk-dev-*``: made by this daemon, made again on demand)
are kept within ``[srs] dev_key_disk_budget``: before one is written, the least
recently used others are deleted until it fits, the key store letting go of
each first (a key in use is never deleted; an idle one is evicted from memory
with its files). A key larger than the whole budget is refused, naming it.

"Used" is a file's modification time, touched when a proof uses the key, so
the order survives a restart. Filecoin's parameters, and development
parameters written under Filecoin's names (``generate_dev_keys``), are not
managed here: the operator asked for those.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cuzk.engine.keystore.devfiles import params_file_bytes
from cuzk.engine.kinds.base import DEV_KEY_PREFIX, KeyFiles
from cuzk.errors import ResourceError

log = logging.getLogger(__name__)

_VK_FIXED_BYTES = 3 * 96 + 3 * 192 + 4  # α₁ β₁ δ₁, β₂ γ₂ δ₂, the IC count
TOUCH_EVERY_S = 10.0  # a key in steady use is touched at most this often


def dev_key_bytes(counts: dict[str, int]) -> int:
    """Disk bytes of a development key: its .params and its .vk (counts as KeyLayout)."""
    return params_file_bytes(counts) + _VK_FIXED_BYTES + 96 * counts["ic"]


def managed(files: KeyFiles) -> bool:
    """Whether a key's files are development keys under our own names."""
    return files.params.startswith(DEV_KEY_PREFIX) and files.params.endswith(".params")


@dataclass(frozen=True)
class _OnDisk:
    circuit_id: str
    params: Path
    vk: Path
    size: int
    used: float  # modification time


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n < 1 << 30 else f"{n / 2**30:.2f} GiB"


class DevKeyCache:
    """``let_go(circuit_id) -> bool``, given by the key store: drop everything it
    holds of an idle key (memory, opened files) and say True, or False while the
    key is in use."""

    def __init__(self, directory: Path, budget: int) -> None:
        self.directory = Path(directory)
        self.budget = budget
        self._lock = threading.Lock()
        self._used: dict[str, float] = {}  # circuit id → last use (time.time()), exact
        self._touched: dict[str, float] = {}  # when its files' mtime was last set

    def on_disk(self) -> list[_OnDisk]:
        """The managed keys in the folder, least recently used first."""
        out = []
        if not self.directory.is_dir():
            return out
        for params in self.directory.glob(f"{DEV_KEY_PREFIX}*.params"):
            cid = params.name[len(DEV_KEY_PREFIX) : -len(".params")]
            vk = params.with_suffix(".vk")
            try:
                st = params.stat()
                size = st.st_size + (vk.stat().st_size if vk.exists() else 0)
            except FileNotFoundError:
                continue  # deleted meanwhile
            out.append(_OnDisk(cid, params, vk, size, max(st.st_mtime, self._used.get(cid, 0))))
        return sorted(out, key=lambda k: (k.used, k.circuit_id))

    def used(self, files: KeyFiles) -> None:
        """A proof uses this key now: it becomes the most recently used."""
        if not managed(files):
            return
        now = time.time()
        with self._lock:
            self._used[files.circuit_id] = now
            if now - self._touched.get(files.circuit_id, 0.0) < TOUCH_EVERY_S:
                return  # the order is exact in memory; the files carry it across restarts
            self._touched[files.circuit_id] = now
        for name in (files.params, files.vk):
            with contextlib.suppress(FileNotFoundError):
                os.utime(self.directory / name)

    def make_room(self, files: KeyFiles | None, need: int, let_go: Callable[[str], bool]) -> None:
        """Delete least recently used keys until ``need`` more bytes (the key ``files``
        about to be written; None and 0 to bring the folder within the budget) fit.

        Raises ResourceError when the key alone is larger than the budget, or when
        the keys in use leave too little room (a later attempt may fit).
        """
        cid = files.circuit_id if files is not None else ""
        if files is not None and need > self.budget:
            raise ResourceError(
                f"the development key of {cid} takes {_size(need)} on disk, more than "
                f"[srs] dev_key_disk_budget ({_size(self.budget)}); raise the budget to prove "
                "a demo of this size"
            )
        with self._lock:
            present = [k for k in self.on_disk() if k.circuit_id != cid]
            total = sum(k.size for k in present)
            for k in present:
                if total + need <= self.budget:
                    break
                if not let_go(k.circuit_id):
                    continue  # in use: never deleted
                for p in (k.params, k.vk):
                    with contextlib.suppress(FileNotFoundError):
                        p.unlink()
                self._touched.pop(k.circuit_id, None)
                self._used.pop(k.circuit_id, None)
                total -= k.size
                log.info(
                    "deleted the development key of %s (%s, least recently used) to stay "
                    "within [srs] dev_key_disk_budget (%s)",
                    k.circuit_id,
                    _size(k.size),
                    _size(self.budget),
                )
        if total + need > self.budget and files is not None:
            raise ResourceError(
                f"the development key of {cid} ({_size(need)}) does not fit [srs] "
                f"dev_key_disk_budget ({_size(self.budget)}): keys in use hold "
                f"{_size(total)}; retry when their proofs have finished"
            )
