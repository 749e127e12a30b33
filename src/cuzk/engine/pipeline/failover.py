"""Device failover: a device that fails goes out of service and its partition to
another device (each partition is tried once per device; its job fails only
when every device has failed it); its workers probe it when the probe is
due; after a failed probe, partitions no device in service may prove fail
their jobs instead of waiting.
"""

from __future__ import annotations

import logging

from cuzk.engine.devices import Device
from cuzk.engine.pipeline.queues import PipelineBase, describe
from cuzk.engine.scheduler import Closed, WorkItem

log = logging.getLogger(__name__)


class Failover(PipelineBase):
    """The device failover of :class:`cuzk.engine.pipeline.Pipeline`."""

    def _give_back(self, item: WorkItem) -> None:
        """A partition taken by a device that cannot prove it now goes back to the
        queue, past its capacity (it already held its place), for another device."""
        if item.job.finished:
            self.release(item)
            return
        item.job.partition_state(item.index, "synth_done")
        try:
            self.synthesized.put(item, block=False)
        except Closed:
            self.release(item)

    def _device_failed(self, dev: Device, item: WorkItem, e: BaseException) -> None:
        """``dev`` failed proving ``item``: the device goes out of service and the
        partition to another device, or its job fails when every device has failed it."""
        reason = describe(e)
        if self.health.failed(dev.ordinal, reason):
            log.error(
                "%s failed: %s; it takes no work until a probe passes (first in %.0f s)",
                dev.label,
                reason,
                self.health.probe_interval,
            )
        self.keys.drop_device(dev)
        self.drop_plans(dev)
        job = item.job
        item.failed_on.add(dev.ordinal)
        item.failures.append(f"{dev.label}: {reason}")
        if job.finished:
            self.release(item)
            return
        if all(d.ordinal in item.failed_on for d in self.devices):
            self._fail(
                item,
                f"partition {item.index}: proving failed on every device "
                f"({'; '.join(item.failures)})",
            )
            return
        self.health.failed_over(dev.ordinal)
        log.warning(
            "job %s partition %d: %s failed (%s); the partition goes to another device",
            job.job_id,
            item.index,
            dev.label,
            reason,
        )
        self._give_back(item)

    def _recover(self, dev: Device) -> None:
        """A worker of an unhealthy device: probe it when its probe is due (one
        worker does), otherwise wait a little."""
        wait = self.health.seconds_to_probe(dev.ordinal)
        if wait is None:  # healthy again
            return
        if wait > 0 or not self.health.claim_probe(dev.ordinal):
            self._stopping.wait(min(max(wait, 0.05), 1.0))
            return
        try:
            if self.faults is not None:
                self.faults.before_probe(dev.ordinal)
            self.keys.drop_device(dev)  # what partitions in flight at the failure left there
            dev.probe()
        except Exception as e:
            self.health.probe_failed(dev.ordinal, describe(e))
            log.warning(
                "%s: its probe failed (%s); the next in %.0f s",
                dev.label,
                describe(e),
                self.health.probe_interval,
            )
            self._fail_stranded()
            return
        self.health.probe_passed(dev.ordinal)
        log.warning("%s passed its probe and takes work again", dev.label)

    def _fail_stranded(self) -> None:
        """After a failed probe: the queued partitions that no device in service may
        prove (every one has failed them already, or none is in service) fail their
        jobs now, rather than wait for devices that may never recover; a partition
        waits at most a probe interval for a device to come back."""
        health = self.health.snapshot()
        in_service = {o for o, r in health.items() if r.healthy}
        stranded = self.synthesized.take_where(lambda it: not in_service - it.failed_on)
        for item in stranded:
            if item.job.finished:
                self.release(item)
                continue
            out = "; ".join(
                f"GPU {o}: {r.last_failure}"
                for o, r in sorted(health.items())
                if not r.healthy and o not in item.failed_on
            )
            if in_service:
                why = f"every device in service has failed it ({'; '.join(item.failures)})"
                why += f" and the others are out of service ({out})" if out else ""
            else:
                why = f"every device is out of service ({out or '; '.join(item.failures)})"
            self._fail(item, f"partition {item.index}: {why}")
