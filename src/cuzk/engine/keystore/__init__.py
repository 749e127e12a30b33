"""The key store: every proving key the engine knows, where it lives, who uses it.

- :mod:`.store`: :class:`KeyStore`, keys per circuit in their tiers (HOT on a
  device, WARM opened, COLD on disk), found in the parameter folders or made
  as development keys, evicted least recently used, and leased to partitions;
- :mod:`.residency`: what of a key and of a partition lives on a given GPU
  budget (resident, or streamed from pinned host memory), planned from the
  circuit's counts;
- :mod:`.devfiles` and :mod:`.devcache`: development keys written as
  parameter files, and the demo sizes' files kept within a disk budget;
- :mod:`.progress`: the log of a key on its way in.
"""

from cuzk.engine.keystore.store import (
    DeviceLease,
    HostLease,
    KeyEntry,
    KeyStatus,
    KeyStore,
    Tier,
)

__all__ = ["DeviceLease", "HostLease", "KeyEntry", "KeyStatus", "KeyStore", "Tier"]
