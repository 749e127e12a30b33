"""``python -m cuzk.bench.host_footprint``: the host side of device-witness proofs."""

from __future__ import annotations

import json
import random

import pytest

from cuzk.bench import host_footprint


@pytest.mark.slow
def test_hint_tables_and_matrices_report_their_peaks(
    tmp_path, module_circuit_cache, capsys
) -> None:
    from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
    from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
    from cuzk.circuits.porep.sealer import seal_random
    from cuzk.circuits.porep.types import C1Wrapper

    proof_type = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"]
    _, c1 = seal_random(proof_type, random.Random(13))
    path = tmp_path / "c1.json"
    path.write_bytes(dumps_wrapper(C1Wrapper(5, dumps_c1(c1), 2048)))

    assert host_footprint.main(["--matrices", "porep-2k", "--device-csr"]) == 0
    built = json.loads(capsys.readouterr().out)
    for name in "abc":  # the key's reservation covers what a GPU holds for its matrices
        csr = built[f"device_{name}_mib"]
        assert 0 < csr["exact"] <= csr["estimate"], (name, csr)
    assert built["circuit"] == "porep-2k" and built["build_s"] > 0
    # the build's private memory stays within what the daemon reserves for it
    # (this process's own baseline, an interpreter with numpy, beside it)
    assert 0 < built["host_peak_anon_mib"] <= built["reserved_mib"] + 512
    with pytest.raises(SystemExit, match="cached already"):
        host_footprint.main(["--matrices", "porep-2k"])

    assert host_footprint.main(["--c1", str(path), "--processes", "1"]) == 0
    made = json.loads(capsys.readouterr().out)  # the worker's table equals this process's
    assert made["circuit"] == "porep-2k" and made["partitions"] == 1
    assert made["hint_table_bytes"] > 0 and len(made["per_partition_s"]) == 1
    assert len(made["worker_peak_mib"]) >= 1  # the forkserver and the worker
    assert made["host_peak_anon_mib"] > max(made["worker_peak_mib"]) // 4
