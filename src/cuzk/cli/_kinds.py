"""A proof kind given by name on the command line: one name per kind
(:data:`cuzk.engine.jobs.KIND_NAMES`: porep, snap, wpost, winning), old
spellings accepted (winning-post, window-post, …), mapped to the circuit
catalog's kinds."""

from __future__ import annotations

from cuzk.circuits.catalog import POREP, SNAP
from cuzk.circuits.post.config import WINDOW, WINNING
from cuzk.engine.jobs import KIND_NAMES, ProofKind, kind_argument

CATALOG = {
    ProofKind.POREP_SEAL_COMMIT: POREP,
    ProofKind.SNAP_DEALS_UPDATE: SNAP,
    ProofKind.WINDOW_POST_PARTITION: WINDOW,
    ProofKind.WINNING_POST: WINNING,
}
CIRCUIT_NAMES = tuple(n for n in KIND_NAMES if n != "demo")
HELP = f"{', '.join(CIRCUIT_NAMES)} (winning-post, window-post accepted)"


circuit_kind = kind_argument(CATALOG)  # argparse ``type``: the catalog's kind of a name
