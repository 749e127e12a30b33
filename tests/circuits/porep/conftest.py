"""Shared PoRep test data: one really sealed 2KiB sector and its C1 output."""

from __future__ import annotations

import random

import pytest

from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.sealer import seal_random


@pytest.fixture(scope="session")
def sealed_2kib():
    """(SealedSector, SealCommitPhase1Output) for a random 2KiB V1_1 sector."""
    return seal_random(REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"], random.Random(2026))
