"""``cuzk-daemon``: the proving service (see cuzk.service)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from cuzk.service.daemon_main import main as daemon_main

    return daemon_main(argv)


if __name__ == "__main__":
    sys.exit(main())
