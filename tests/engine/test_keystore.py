"""The key store: keys as .params/.vk files (found, checked, or generated as
development keys), tiers, reference counts, LRU eviction within the budget."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.circuits.parameters import file_digest
from cuzk.engine.budget import Budget, Cancelled
from cuzk.engine.devices import Device
from cuzk.engine.jobs import InUse, ProofKind, ProofRequest
from cuzk.engine.keystore import KeyStore, Tier, devfiles
from cuzk.engine.kinds import KindRegistry, demo
from cuzk.engine.kinds.base import KeyFiles, key_host_bytes
from cuzk.errors import InputError, ResourceError
from cuzk.formats.bellperson import open_params
from cuzk.groth16 import prover, verifier

A = demo.circuit_id(20, 1)
B = demo.circuit_id(24, 1)


class FakePost(demo.DemoKind):
    """A kind that chains verify (no dev keys without the operator's consent)."""

    kind = ProofKind.WINNING_POST
    dev_keys_by_default = False
    published_vk_digest: str | None = None  # set by a test: the "published" .vk digest

    def owns(self, cid: str) -> bool:
        return cid == "winning-test"

    def _circuit(self, cid: str) -> DemoCircuit:
        return DemoCircuit(5, 1)

    def key_files(self, cid: str) -> KeyFiles:
        if self.published_vk_digest is None:
            return KeyFiles.development(cid)
        return KeyFiles(cid, "v28-test.params", "v28-test.vk", "0" * 32, self.published_vk_digest)


def manager(
    tmp_path: Path,
    limit: int = 1 << 30,
    min_idle: float = 0.0,
    dev: bool = False,
    post: FakePost | None = None,
    search: list[Path] | None = None,
):
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    reg.register(post or FakePost())
    budget = Budget("host", limit)
    cpu = Device(0, "cpu", CpuBackend(), 0, None)
    return KeyStore(tmp_path, reg, budget, [cpu], min_idle, dev, search_dirs=search), budget


def status(m: KeyStore, cid: str):
    (s,) = [s for s in m.status() if s.circuit_id == cid]
    return s


def demo_witness(cid: str = A):
    kind = demo.DemoKind()
    body = demo.make_vanilla(DemoCircuit(20, 1), 1)
    part = kind.parse(ProofRequest(ProofKind.DEMO, vanilla_proof=body)).partitions[0]
    return kind.r1cs(cid), kind.synthesize(cid, part)


def test_dev_key_is_written_as_params_files_and_reused(tmp_path: Path) -> None:
    m, _ = manager(tmp_path)
    vk = m.verifying_key(A)
    files = KeyFiles.development(A)
    params, vk_file = tmp_path / files.params, tmp_path / files.vk
    assert params.is_file() and vk_file.is_file()
    assert status(m, A).development and status(m, A).file == str(params)
    m2, _ = manager(tmp_path)
    m2.discover_cached()
    assert status(m2, A).tier == Tier.COLD and status(m2, A).size_bytes == params.stat().st_size
    assert m2.verifying_key(A) == vk
    assert status(m2, A).tier == Tier.WARM  # opened, nothing loaded
    r1cs, w = demo_witness()
    key = prover.load(open_params(params, vk_file), r1cs, CpuBackend())
    assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, r1cs, w.assignment))


def test_tiers_refcounts_and_evict(tmp_path: Path) -> None:
    m, budget = manager(tmp_path)
    lease = m.acquire_host(A, 1000)
    s = status(m, A)
    assert s.tier == Tier.HOT and s.ref_count == 1 and s.devices == (0,)
    with pytest.raises(InUse, match="in use by 1 partition"):
        m.evict(A)
    key_bytes = key_host_bytes(demo.DemoKind().r1cs(A))
    assert budget.reserved == key_bytes + 1000
    m.release_host(lease)
    assert status(m, A).ref_count == 0 and budget.reserved == key_bytes
    assert m.evict(A) == (True, key_bytes)
    assert status(m, A).tier == Tier.WARM and budget.reserved == 0
    assert m.evict(A) == (False, 0)
    assert status(m, A).tier == Tier.COLD
    assert m.preload(A)[0] is False
    assert m.preload(A) == (True, 0.0)
    assert status(m, A).tier == Tier.HOT


def test_lru_eviction_under_pressure(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, budget = manager(tmp_path, limit=max(ka, kb) + 4096)
    m.release_host(m.acquire_host(A, 100))
    assert status(m, A).tier == Tier.HOT
    m.release_host(m.acquire_host(B, 100))  # A is idle: evicted to make room
    assert status(m, A).tier == Tier.WARM
    assert status(m, B).tier == Tier.HOT
    assert budget.peak <= budget.limit


def test_keys_idle_less_than_min_idle_are_kept(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=max(ka, kb) + 4096, min_idle=3600)
    m.release_host(m.acquire_host(A, 100))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):
        m.acquire_host(B, 100, cancelled=stop.is_set)
    assert status(m, A).tier == Tier.HOT
    assert status(m, B).ref_count == 0  # the failed acquisition left no pin behind


def test_a_key_in_use_is_never_evicted_for_another(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=max(ka, kb) + 4096)
    lease = m.acquire_host(A, 100)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):
        m.acquire_host(B, 100, cancelled=stop.is_set)
    assert status(m, A).tier == Tier.HOT
    m.release_host(lease)


def test_filecoin_kinds_need_consent_for_dev_keys(tmp_path: Path) -> None:
    m, _ = manager(tmp_path, search=[tmp_path / "elsewhere"])
    with pytest.raises(ResourceError) as e:
        m.acquire_host("winning-test", 100)
    message = str(e.value)
    assert "no parameters for winning-test" in message and "generate_dev_keys" in message
    assert str(tmp_path / "elsewhere") in message  # every folder searched is named
    assert status(m, "winning-test").ref_count == 0
    m2, _ = manager(tmp_path, dev=True)
    m2.release_host(m2.acquire_host("winning-test", 100))
    with pytest.raises(InputError, match="no registered proof kind"):
        m.preload("porep-32g")


def write_post_params(directory: Path, post: FakePost) -> KeyFiles:
    """Development parameters of the fake PoSt circuit under its "published" names."""
    files = post.key_files("winning-test")
    devfiles.write_dev_params(post.r1cs("winning-test"), files, directory, seed=5)
    return files


def test_published_keys_are_told_from_development_files_by_the_vk_digest(tmp_path: Path) -> None:
    fetched = tmp_path / "filecoin-proof-parameters"
    post = FakePost()
    post.published_vk_digest = "f" * 32
    files = write_post_params(fetched, post)
    m, _ = manager(tmp_path / "cache", post=post, search=[fetched])
    with pytest.raises(InputError) as e:  # not the published .vk: refused by default
        m.verifying_key("winning-test")
    assert str(fetched / files.vk) in str(e.value) and "not Filecoin's parameters" in str(e.value)
    m, _ = manager(tmp_path / "cache", post=post, search=[fetched], dev=True)
    m.verifying_key("winning-test")
    assert status(m, "winning-test").development  # allowed, and reported as such
    post.published_vk_digest = file_digest(fetched / files.vk)  # as if it were the real file
    m, _ = manager(tmp_path / "cache", post=post, search=[fetched])
    m.release_host(m.acquire_host("winning-test", 100))
    s = status(m, "winning-test")
    assert not s.development and s.file == str(fetched / files.params)
    assert not (tmp_path / "cache").exists()  # found, not generated


def test_param_cache_is_searched_before_the_other_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for d in (first, second):
        devfiles.write_dev_params(demo.DemoKind().r1cs(A), KeyFiles.development(A), d, seed=1)
    m, _ = manager(first, search=[second])
    m.verifying_key(A)
    assert status(m, A).file == str(first / KeyFiles.development(A).params)
    (first / KeyFiles.development(A).params).unlink()
    m, _ = manager(first, search=[second])
    m.verifying_key(A)
    assert status(m, A).file == str(second / KeyFiles.development(A).params)


def damage(path: Path, how: str) -> str:
    """Damage a demo key file; returns what the error must name."""
    files = KeyFiles.development(A)
    params = path / files.params
    data = bytearray(params.read_bytes())
    source = open_params(params)
    if how == "truncated":
        params.write_bytes(bytes(data[: len(data) - 1000]))
        return "truncated"
    if how == "bit-flip":
        sec = source.sections["l"]
        at = sec.offset + 3 * 96 + 95  # the last byte of l[3]'s y
        data[at] ^= 0x01
        params.write_bytes(bytes(data))
        return f"l[3]: not on the G1 curve (byte offset {sec.offset + 3 * 96})"
    if how == "wrong-circuit":
        other = KeyFiles.development(B)
        devfiles.write_dev_params(demo.DemoKind().r1cs(B), other, path, seed=2)
        (path / other.params).replace(params)
        (path / other.vk).replace(path / files.vk)
        return "key and circuit differ"
    if how == "other-vk":
        other = KeyFiles.development(B)
        devfiles.write_dev_params(demo.DemoKind().r1cs(B), other, path, seed=2)
        (path / files.vk).write_bytes((path / other.vk).read_bytes())
        return "is not the verifying key"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "bit-flip", "wrong-circuit", "other-vk"])
def test_a_bad_key_file_is_named_and_the_others_still_serve(tmp_path: Path, how: str) -> None:
    devfiles.write_dev_params(demo.DemoKind().r1cs(A), KeyFiles.development(A), tmp_path, seed=1)
    must_name = damage(tmp_path, how)
    m, budget = manager(tmp_path)
    with pytest.raises(InputError) as e:
        m.acquire_host(A, 100)
    assert str(tmp_path) in str(e.value) and must_name in str(e.value)
    assert status(m, A).ref_count == 0 and budget.reserved == 0  # nothing held
    m.release_host(m.acquire_host(B, 100))  # another circuit's key still serves
    assert status(m, B).tier == Tier.HOT
    for f in KeyFiles.development(A).params, KeyFiles.development(A).vk:
        (tmp_path / f).unlink()
    m.release_host(m.acquire_host(A, 100))  # fixed on disk (here: made again): served
    assert status(m, A).tier == Tier.HOT


class ArkFixedBase:
    """MsmEngine's fixed-base interface, computed with the pairing library."""

    def fixed_base_g1(self, point, scalars, to_host=True):
        from cuzk.algebra import pairing
        from cuzk.algebra.arrays import fr_from_array, g1_to_array

        return g1_to_array([pairing.g1_mul(point, k) for k in fr_from_array(scalars)])

    def fixed_base_g2(self, point, scalars, to_host=True):
        from cuzk.algebra import pairing
        from cuzk.algebra.arrays import fr_from_array, g2_to_array

        return g2_to_array([pairing.g2_mul(point, k) for k in fr_from_array(scalars)])


def fake_gpu_manager(tmp_path: Path, monkeypatch, made: list):
    """A manager whose one device says it is a GPU; its points are made by a
    stand-in for the GPU's fixed-base kernels (arkworks on the CPU)."""
    from types import SimpleNamespace

    import cuzk.engine.keystore.sources as srs
    from cuzk.groth16.setup_gpu import GpuPoints

    gpu = Device(
        0, "fake gpu", SimpleNamespace(name="cuda", ctx=None), 1 << 30, Budget("v", 1 << 30)
    )
    monkeypatch.setattr(
        srs, "gpu_points", lambda d: made.append(d) or GpuPoints(ArkFixedBase(), np)
    )
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    host = Budget("host", 1 << 30)
    return KeyStore(tmp_path, reg, host, [gpu], 0.0, False), host, gpu


def test_dev_keys_are_made_on_the_gpu_when_the_devices_are_cuda(tmp_path: Path, monkeypatch):
    made: list = []
    m, host, gpu = fake_gpu_manager(tmp_path, monkeypatch, made)
    vk = m.verifying_key(A)
    assert made == [gpu]
    r1cs, w = demo_witness()
    # the host held the query scalars and a chunk, not the key's points
    assert host.peak == devfiles.dev_setup_host_bytes(r1cs.num_constraints) and host.reserved == 0
    files = KeyFiles.development(A)
    key = prover.load(open_params(tmp_path / files.params, tmp_path / files.vk), r1cs, CpuBackend())
    assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, r1cs, w.assignment))


def test_a_dev_key_too_big_for_the_disk_is_made_in_gpu_memory(tmp_path: Path, monkeypatch):
    import cuzk.engine.keystore.sources as srs

    monkeypatch.setattr(srs, "disk_free", lambda d: 0)
    made: list = []
    m, host, _ = fake_gpu_manager(tmp_path, monkeypatch, made)
    vk = m.verifying_key(A)
    assert list(tmp_path.iterdir()) == []  # no file
    assert status(m, A).development and status(m, A).file == ""
    assert host.reserved == 0  # its scalars were given back
    assert m.verifying_key(A) == vk
    # made again (same toxic waste) when a device loads it: the same key
    source = m._source(m.entry(A))
    r1cs, w = demo_witness()
    key = prover.load(source, r1cs, CpuBackend())
    m._loaded(m.entry(A), source)
    assert host.reserved == 0
    assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, r1cs, w.assignment))


class CudaNamed(CpuBackend):
    """A CPU backend that says it is CUDA (for the key store's GPU paths)."""

    name = "cuda"


def test_a_file_less_dev_key_is_made_on_each_gpu_that_loads_it(tmp_path: Path, monkeypatch):
    """Two GPUs, a development key too big for the disk: each GPU makes the points
    it loads; the query scalars are shared by the loads under way and given back
    after the last."""
    import contextlib

    import cuzk.engine.keystore.sources as srs
    from cuzk.groth16.setup_gpu import GpuPoints

    monkeypatch.setattr(srs, "disk_free", lambda d: 0)
    makers: list[int] = []
    monkeypatch.setattr(
        srs, "gpu_points", lambda d: makers.append(d.ordinal) or GpuPoints(ArkFixedBase(), np)
    )
    monkeypatch.setattr(Device, "activate", lambda self: contextlib.nullcontext())
    gpus = [Device(o, f"gpu {o}", CudaNamed(), 4 << 30, Budget(f"v{o}", 4 << 30)) for o in (0, 1)]
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    host = Budget("host", 1 << 30)
    m = KeyStore(tmp_path, reg, host, gpus, 0.0, False)
    e = m.entry(A)
    # two loads under way share one set of scalars; the last gives them back
    first, second = m._source(e, device=gpus[0]), m._source(e, device=gpus[1])
    assert first is second and e.dev_users == 2 and host.reserved > 0
    m._loaded(e, first)
    assert host.reserved > 0 and e.source is first
    # GPU 1 loading the key GPU 0 is making makes its points itself, from the same scalars
    other = m._device_source(e, first, gpus[1])
    assert other is not first and other._scalars is first._scalars and other.vk == first.vk
    assert m._device_source(e, first, gpus[0]) is first
    m._loaded(e, second)
    assert host.reserved == 0 and e.source is None and e.dev_users == 0
    # each GPU loads the key from points made on itself
    makers.clear()
    r1cs, w = demo_witness()
    lease = m.acquire_host(A, 0)
    keys = []
    for g in gpus:
        dl = m.acquire_device(lease, g)
        keys.append(dl.key)
        m.release_device(dl)
    m.release_host(lease)
    assert makers[-1] == 1 and makers.count(1) == 1  # GPU 1 made its own points
    assert status(m, A).devices == (0, 1) and host.reserved == 0
    vk = m.verifying_key(A)
    for key in keys:
        assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, r1cs, w.assignment))
    assert list(tmp_path.iterdir()) == []  # no file


def test_a_dev_key_that_fits_neither_disk_nor_a_gpu_is_refused(tmp_path: Path, monkeypatch):
    import cuzk.engine.keystore.sources as srs

    monkeypatch.setattr(srs, "disk_free", lambda d: 0)
    m, _ = manager(tmp_path)
    with pytest.raises(ResourceError, match=f"development key of {A} needs"):
        m.verifying_key(A)


class BuildCounting(demo.DemoKind):
    """The demo kind, its matrices taking ``build`` bytes to build, builds counted."""

    def __init__(self, build: int) -> None:
        self.build = build
        self.builds: list[str] = []

    def r1cs_build_bytes(self, cid: str) -> int:
        return self.build

    def r1cs(self, cid: str):
        self.builds.append(cid)
        return super().r1cs(cid)


def test_matrices_are_built_once_within_the_host_budget(tmp_path: Path) -> None:
    kind = BuildCounting(5000)
    reg = KindRegistry()
    reg.register(kind)
    host = Budget("host", 1 << 30)
    m = KeyStore(tmp_path, reg, host, [Device(0, "cpu", CpuBackend(), 0, None)], 0.0, False)
    threads = [threading.Thread(target=m.ensure_r1cs, args=(A,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert kind.builds == [A]  # four callers at once: one build
    assert host.peak == 5000 and host.reserved == 0  # reserved while building only
    m.ensure_r1cs(A)
    assert kind.builds == [A]


def test_matrices_too_big_for_the_budget_are_refused_with_the_reason(tmp_path: Path) -> None:
    kind = BuildCounting(2 << 30)
    reg = KindRegistry()
    reg.register(kind)
    m = KeyStore(tmp_path, reg, Budget("host", 1 << 30), [Device(0, "cpu", CpuBackend(), 0, None)])
    with pytest.raises(ResourceError, match=f"matrices of {A} needs"):
        m.ensure_r1cs(A)
    assert kind.builds == []


def test_post_keys_are_never_evicted_for_porep(tmp_path: Path) -> None:
    """An idle WinningPoSt key stays HOT while a PoRep-like key waits for memory
    another key holds, and the idle other key goes instead; time-critical work
    may evict it."""
    from cuzk.engine.budget import time_critical

    post = "winning-test"
    kp = key_host_bytes(FakePost().r1cs(post))
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=kp + kb + 200, dev=True)
    assert kp + ka + kb + 200 > kp + kb + 200 >= kp + ka + 100  # A or B beside the PoSt key
    m.release_host(m.acquire_host(post, 100))
    lease = m.acquire_host(A, 100)  # A in use: B must wait for it, not take the PoSt key's place
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):
        m.acquire_host(B, 100, cancelled=stop.is_set)
    assert status(m, post).tier == Tier.HOT
    m.release_host(lease)
    m.release_host(m.acquire_host(B, 100))  # A is idle now: it goes
    assert status(m, post).tier == Tier.HOT and status(m, A).tier == Tier.WARM
    assert status(m, B).tier == Tier.HOT
    with time_critical():  # time-critical work may take the PoSt key's place
        m.release_host(m.acquire_host(A, 100))
    assert status(m, A).tier == Tier.HOT and Tier.WARM in (status(m, post).tier, status(m, B).tier)


def test_a_post_key_gives_way_to_work_that_could_never_fit_beside_it(tmp_path: Path, caplog):
    """A PoRep-like key that does not fit the budget beside an idle PoSt key
    would wait for ever: the PoSt key is evicted for it, with a warning."""
    post = "winning-test"
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=kb + 4096, dev=True)
    m.release_host(m.acquire_host(post, 100))
    m.release_host(m.acquire_host(B, 100))
    assert status(m, post).tier == Tier.WARM and status(m, B).tier == Tier.HOT
    assert "other work could never fit beside it" in caplog.text
