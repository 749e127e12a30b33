"""SnapDeals as an engine kind, and cancellation of Filecoin jobs at partition
boundaries (a 4-partition SnapDeals job and a queued PoRep job)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.sealer import seal_random
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.circuits.update.generate import UpdateSector, generate_sector
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import public_inputs, write_partition_proof
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.keystore import HostLease
from cuzk.engine.kinds import KindRegistry, default_registry
from cuzk.engine.kinds.base import PartitionInput, Witness
from cuzk.engine.kinds.porep import PoRepKind
from cuzk.engine.kinds.snap import SnapKind, compiled_for
from cuzk.errors import InputError
from cuzk.hashers.domain import fr_to_le_bytes
from cuzk.synthesis.satisfy import compiled_unsatisfied_rows

pytestmark = pytest.mark.usefixtures("module_circuit_cache")


@pytest.fixture(scope="module")
def sector_2kib() -> UpdateSector:
    return generate_sector(UpdateParams.of("2KiB"), random.Random(21))


def snap_request(s: UpdateSector, partitions: int | None = None, **kw) -> ProofRequest:
    n = s.params.partition_count if partitions is None else partitions
    fields = {
        "vanilla_proofs": tuple(write_partition_proof(s.partition_proof(k)) for k in range(n)),
        "comm_r_old": fr_to_le_bytes(s.comm_r_old),
        "comm_d_new": fr_to_le_bytes(s.comm_d_new),
        "comm_r_new": fr_to_le_bytes(s.comm_r_new),
        "sector_size": s.params.sector_bytes,
    }
    return ProofRequest(ProofKind.SNAP_DEALS_UPDATE, **{**fields, **kw})


def test_request_is_parsed_and_its_witness_satisfies_the_circuit(sector_2kib) -> None:
    s = sector_2kib
    handler, parsed = default_registry().parse(snap_request(s, registered_proof=0))
    assert isinstance(handler, SnapKind)
    assert parsed.circuit_id == "snap-2k" and [p.index for p in parsed.partitions] == [0]
    w = handler.synthesize("snap-2k", parsed.partitions[0])
    roots = (s.comm_r_old, s.comm_d_new, s.comm_r_new)
    assert list(w.public_inputs) == public_inputs(s.params, 0, s.h, *roots)
    cc = compiled_for("snap-2k")
    assert w.assignment.shape == (cc.num_inputs + cc.num_aux, 4)
    assert len(compiled_unsatisfied_rows(cc, w.assignment)) == 0
    assert all(handler.owns(f"snap-{x}") for x in ("2k", "8m", "512m", "32g", "64g"))
    assert not handler.owns("porep-2k") and not handler.owns("snap-16k")


def test_bad_requests_are_refused_with_the_field(sector_2kib, caplog) -> None:
    s = sector_2kib
    reg = default_registry()
    cases = [
        (snap_request(s, comm_d_new=bytes(31)), "comm_d_new: is 31 bytes, expected 32"),
        (snap_request(s, sector_size=0, registered_proof=9), "9 is not a RegisteredUpdateProof"),
        (snap_request(s, sector_size=8 << 20), "1 given, a 8MiB SnapDeals proof has 4 partition"),
        (snap_request(s, comm_r_old=b"\xff" * 32), "comm_r_old: 0xff"),
        (
            snap_request(s, vanilla_proofs=(b"\x00" * 40,)),
            r"vanilla_proofs\[0\]: .*truncated",
        ),
    ]
    for req, message in cases:
        with pytest.raises(InputError, match=message) as e:
            reg.parse(req)
        assert str(e.value).startswith("snap request")
    # sector_size and registered_proof disagree: the proof type decides, logged.
    import logging

    with caplog.at_level(logging.WARNING):
        params = SnapKind()._params(snap_request(s, registered_proof=3))
    assert params == UpdateParams.of(32 << 30)
    assert "sector_size 2KiB disagrees with registered_proof 3 (32GiB): proved as 32GiB" in (
        caplog.text
    )
    # Well-formed but not this sector's: refused when the partition is synthesized.
    kind = SnapKind()
    wrong = snap_request(s, comm_r_new=fr_to_le_bytes(s.comm_r_new + 1))
    with pytest.raises(InputError, match=r"vanilla_proofs\[0\]: comm_c: .* not comm_r_new"):
        kind.synthesize("snap-2k", kind.parse(wrong).partitions[0])


# --- cancellation at partition boundaries --------------------------------------------------


class Recording(SnapKind):
    """SnapDeals, with each synthesis recorded; partition 0 waits for a go-ahead."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.started = threading.Event()
        self.go = threading.Event()

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        self.calls.append(partition.index)
        if partition.index == 0:
            self.started.set()
            assert self.go.wait(60)
        return super().synthesize(cid, partition)


def _config(tmp_path: Path) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "64GiB", "eviction_min_idle": "0s"},
        gpus={"backend": "cpu"},
    )


@pytest.mark.slow
def test_cancel_stops_filecoin_jobs_at_partition_boundaries(tmp_path: Path) -> None:
    """A running 4-partition SnapDeals 8MiB job stops after the partition being
    synthesized (which is dropped, never proven); a queued PoRep job is never
    synthesized; what they held comes back.

    No proving key of a 10 M-constraint circuit can be made in a test, so the
    key stage is stood in for: the host lease pins the key entry and reserves
    the partition's real working set, as the key store's does.
    """
    snap = Recording()
    reg = KindRegistry()
    reg.register(snap)
    reg.register(PoRepKind())
    e = Engine(_config(tmp_path), kinds=reg)
    proving: list[str] = []

    def acquire_host(cid: str, working: int, cancelled=None) -> HostLease:
        entry = e.keys.entry(cid)
        (res,) = e.host_budget.reserve([(working, f"partition {cid}")], cancelled=cancelled)
        with e.keys._lock:
            entry.refs += 1
        return HostLease(entry, res, 0.0)

    def acquire_device(lease, device, cancelled=None):
        proving.append(lease.entry.circuit_id)
        raise AssertionError("a cancelled partition reached the prover")

    e.keys.acquire_host = acquire_host
    e.keys.acquire_device = acquire_device
    e.start()
    try:
        running = e.submit(snap_request(generate_sector(UpdateParams.of("8MiB"), random.Random(8))))
        assert snap.started.wait(60)
        _, c1 = seal_random(REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_1"], random.Random(3))
        raw = dumps_wrapper(C1Wrapper(1, dumps_c1(c1), 2048))
        queued = e.submit(ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=raw))
        assert e.registry.get(queued.job_id).state == JobState.QUEUED
        assert e.cancel(queued.job_id) is False
        assert e.cancel(running.job_id) is True
        snap.go.set()
        for job_id in (running.job_id, queued.job_id):
            job, _ = e.await_job(job_id, 60)
            assert job.state == JobState.CANCELLED and not job.partition_proofs
        end = time.monotonic() + 60
        while e.host_budget.reserved or any(s.ref_count for s in e.keys.status()):
            assert time.monotonic() < end, "the cancelled partition's memory was not released"
            time.sleep(0.05)
        assert snap.calls == [0]  # partitions 1-3 were dropped from the queue
        assert proving == []
    finally:
        snap.go.set()
        e.stop()
