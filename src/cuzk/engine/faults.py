"""Failure injection: a test hook that makes one device fail in the middle of a batch.

Off unless ``CUZK_FAIL_DEVICE=ORDINAL:AFTER[:MODE]`` is set (docs/ENVIRONMENT.md)
when the engine starts. Device ORDINAL proves AFTER partitions; as it starts
the next one it raises :class:`~cuzk.errors.DeviceError`, inside the
partition's device reservation, where a failing GPU's error would surface.
MODE ``lost`` (the default) is a GPU that fell off the bus: every later
partition and every probe on it fails too, so it stays out of service.
``once`` is a transient fault: one partition fails, the first probe passes
and the device takes work again. The pipeline treats the injected failure
exactly as a real one (:mod:`cuzk.engine.health`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from cuzk import environment
from cuzk.errors import DeviceError, InputError

log = logging.getLogger(__name__)


class FailureInjection:
    def __init__(self, ordinal: int, after: int, mode: str = "lost") -> None:
        self.ordinal = ordinal
        self.after = after
        self.mode = mode
        self.started = 0  # partitions the device has started
        self.fired = False
        self._lock = threading.Lock()

    @staticmethod
    def from_environment(ordinals: Iterable[int]) -> FailureInjection | None:
        """The injection ``CUZK_FAIL_DEVICE`` asks for, checked against the devices."""
        spec = environment.fail_device()
        if spec is None:
            return None
        have = sorted(ordinals)
        if spec.ordinal not in have:
            raise InputError(
                "environment",
                "CUZK_FAIL_DEVICE",
                f"no device {spec.ordinal} to fail (the devices are {', '.join(map(str, have))})",
            )
        log.warning(
            "CUZK_FAIL_DEVICE: device %d will fail as it starts partition %d (%s): a test hook",
            spec.ordinal,
            spec.after + 1,
            spec.mode,
        )
        return FailureInjection(spec.ordinal, spec.after, spec.mode)

    def before_proof(self, ordinal: int) -> None:
        """Called as ``ordinal`` starts a partition's proof; raises when it is to fail."""
        if ordinal != self.ordinal:
            return
        with self._lock:
            self.started += 1
            fire = self.started > self.after and (self.mode == "lost" or not self.fired)
            if fire:
                self.fired = True
        if fire:
            raise DeviceError(ordinal, "injected failure (CUZK_FAIL_DEVICE)")

    def before_probe(self, ordinal: int) -> None:
        """Called before ``ordinal`` is probed: a lost device fails its probes."""
        if ordinal == self.ordinal and self.fired and self.mode == "lost":
            raise DeviceError(ordinal, "injected failure (CUZK_FAIL_DEVICE): the device is lost")
