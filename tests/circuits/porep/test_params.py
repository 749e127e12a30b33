from __future__ import annotations

import pytest

from cuzk.circuits.porep.params import (
    GIB,
    REGISTERED_SEAL_PROOFS,
    ApiVersion,
    parse_size,
    registered_proof,
    sector_params,
    size_name,
)
from cuzk.errors import InputError


def test_registry_ids_and_porep_ids():
    assert len(REGISTERED_SEAL_PROOFS) == 20
    p = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1"]
    assert p.proof_id == 8
    assert p.porep_id == bytes([8]) + bytes(31)
    assert p.api_version == ApiVersion.V1_1_0
    assert p.vanilla_variant == "StackedDrg32GiBV1"
    assert REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1"].proof_id == 0
    assert REGISTERED_SEAL_PROOFS["StackedDrg64GiBV1_2_Feat_NonInteractivePoRep"].proof_id == 19
    assert REGISTERED_SEAL_PROOFS["StackedDrg512MiBV1_1_Feat_SyntheticPoRep"].proof_id == 12


@pytest.mark.parametrize(
    ("size", "layers", "partitions", "per_partition", "inputs", "arities"),
    [
        ("2KiB", 2, 1, 2, 40, (8, 8)),
        ("8MiB", 2, 1, 2, 40, (8,) * 6),
        ("512MiB", 2, 1, 2, 40, (8,) * 8),
        ("32GiB", 11, 10, 18, 328, (8,) * 10),
        ("64GiB", 11, 10, 18, 328, (8,) * 10 + (2,)),
    ],
)
def test_sector_shapes(size, layers, partitions, per_partition, inputs, arities):
    s = sector_params(parse_size(size))
    assert (s.layers, s.partitions, s.challenges_per_partition) == (
        layers,
        partitions,
        per_partition,
    )
    assert s.num_public_inputs() == inputs
    assert s.tree_arities == arities
    assert size_name(s.sector_size) == size


def test_parse_size_and_unknown_names():
    assert parse_size("32GiB") == 32 * GIB
    assert parse_size("2048") == 2048
    with pytest.raises(ValueError):
        parse_size("32 gigs")
    with pytest.raises(ValueError):
        sector_params(4096)
    with pytest.raises(InputError, match="unknown seal proof type"):
        registered_proof("StackedDrg3KiBV1", "c1.json")
