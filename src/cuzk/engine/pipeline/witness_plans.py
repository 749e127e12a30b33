"""Static witness plans resident on the devices: a circuit's plan is uploaded to
a device once, under a reservation of its own (waiting for room as a key
does), and given back when the device fails.

A plan is loaded ahead of its first partition (:meth:`WitnessPlans.warm_plan`):
when a job is accepted the daemon loads its circuit's plan from the circuit
cache in the background, while the request's partitions are checked in the
synthesis processes, so the first partition's GPU worker finds it in memory
instead of loading it on the prover's line; a preloaded key warms the
synthesis processes' copies too.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cuzk.engine.devices import Device
from cuzk.engine.kinds.base import ProofKindHandler
from cuzk.engine.pipeline.queues import PipelineBase
from cuzk.synthesis.static_plan import StaticPlan

log = logging.getLogger(__name__)


class WitnessPlans(PipelineBase):
    """The device witness plans of :class:`cuzk.engine.pipeline.Pipeline`."""

    def warm_plan(
        self, handler: ProofKindHandler, circuit_id: str, processes: bool = False
    ) -> threading.Thread | None:
        """Load ``circuit_id``'s static witness plan into this process in a
        background thread (returned; None when its witnesses are not made on
        the devices or it is loading already), and with ``processes`` into the
        synthesis processes too. Only a plan the circuit cache holds (or this
        process has) is loaded: the first partition's hints record a new one.
        The first partition's GPU worker then finds the plan in memory
        (``PlanCache``: callers of one circuit wait for its one load)."""
        if not self.witness_on_device(handler):  # type: ignore[attr-defined]
            return None
        if processes and self.synth_pool is not None:
            self.synth_pool.warm_plan(handler, circuit_id)
        with self._plans_lock:
            if circuit_id in self._warming:
                return None
            self._warming.add(circuit_id)

        def load() -> None:
            t = time.monotonic()
            try:
                handler.witness_plan(circuit_id)
                log.info(
                    "%s: witness plan ready in %.2f s (loaded ahead of its first partition)",
                    circuit_id,
                    time.monotonic() - t,
                )
            except Exception as e:  # not cached yet: the first partition records it
                log.debug("%s: no witness plan to load ahead: %s", circuit_id, e)
            finally:
                with self._plans_lock:
                    self._warming.discard(circuit_id)

        thread = threading.Thread(target=load, name=f"warm-plan-{circuit_id}", daemon=True)
        try:
            thread.start()
        except RuntimeError as e:  # best effort: the first partition loads it as before
            log.warning("%s: the witness plan is not loaded ahead: %s", circuit_id, e)
            with self._plans_lock:
                self._warming.discard(circuit_id)
            return None
        return thread

    def _device_plan(
        self, device: Device, circuit_id: str, plan: StaticPlan, cancelled: Callable[[], bool]
    ) -> Any:
        """``device``'s witness maker with ``plan`` uploaded there, under a
        reservation of its own held until the device is dropped (waiting for
        room as a key does: idle keys are evicted first)."""
        key = (device.ordinal, circuit_id)
        maker = device.witness_device()
        with self._plans_lock:
            lock = self._device_locks.setdefault(device.ordinal, threading.Lock())
        with lock:  # one upload at a time per device; other devices go on
            if key in self._device_plans:  # (a circuit's plan is one object per process)
                return maker
            res = None
            if device.budget is not None:
                (res,) = device.budget.reserve(
                    [(plan.device_bytes(), f"witness plan {circuit_id}")],
                    evict=lambda n: self.keys.evict_idle(n, device),
                    cancelled=cancelled,
                )
            holds = getattr(maker, "holds", [])
            before = len(holds)
            try:
                lent = device.budget.lend(res) if res is not None else contextlib.nullcontext()
                with device.activate(), lent:
                    plan.prepare(maker)
            except BaseException:
                _forget(plan, maker, holds[before:], res)
                raise
            with self._plans_lock:  # the plan's arrays' holds go with it
                self._device_plans[key] = (plan, res, holds[before:])
        return maker

    def _drop_plan(self, device: Device, key: tuple[int, str]) -> None:
        with self._plans_lock:
            got = self._device_plans.pop(key, None)
        if got is None:
            return
        plan, res, holds = got
        _forget(plan, device.witness_device(), holds, res)

    def drop_plans(self, device: Device) -> None:
        """Give back the witness plans uploaded to ``device`` (it failed)."""
        with self._plans_lock:
            keys = [k for k in self._device_plans if k[0] == device.ordinal]
        for key in keys:
            self._drop_plan(device, key)


def _forget(plan: StaticPlan, maker: Any, holds: list, res: Any) -> None:
    """A plan's arrays dropped from a device: their budget holds released (the
    maker keeps the holds of its other plans), then the plan's reservation."""
    plan.forget(maker)
    for h in holds:
        h.release()
    mine = {id(h) for h in holds}
    if hasattr(maker, "holds"):
        maker.holds = [h for h in maker.holds if id(h) not in mine]
    if res is not None:
        res.release()
