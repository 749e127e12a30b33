"""The key store: every proving key the engine knows, where it lives, who uses it.

- :mod:`.store`: :class:`KeyStore`, keys per circuit in their tiers (HOT on a
  device, WARM opened, COLD on disk), loaded onto devices as their residency
  says, evicted least recently used, and leased to partitions;
- :mod:`.entry`: a key's record (:class:`KeyEntry`) and the leases on it;
- :mod:`.sources`: where a key comes from: its parameter files, found and
  checked, or a development key;
- :mod:`.residency`: what of a key and of a partition lives on a given GPU
  budget (resident, or streamed from pinned host memory), planned from the
  circuit's counts;
- :mod:`.devfiles` and :mod:`.devcache`: development keys written as
  parameter files, and the demo sizes' files kept within a disk budget;
- :mod:`.progress`: the log of a key on its way in.
"""

from cuzk.engine.keystore.entry import DeviceLease, HostLease, KeyEntry, KeyStatus, Tier
from cuzk.engine.keystore.store import KeyStore

__all__ = ["DeviceLease", "HostLease", "KeyEntry", "KeyStatus", "KeyStore", "Tier"]
