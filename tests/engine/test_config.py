"""Config: Curio's cuzk.toml keys load, ours are typed, unknown keys warn, bad values fail."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.engine.config import (
    GIB,
    MIB,
    Config,
    config_from_dict,
    cuzk_home,
    default_config_path,
    detect_system_memory,
    load_config,
    parse_duration,
    parse_size,
)
from cuzk.errors import InputError

CURIO_EXAMPLE = """
[daemon]
listen = "0.0.0.0:9820"
status_listen = "0.0.0.0:9821"

[srs]
param_cache = "/data/zk/params"
preload = ["porep-32g"]

[memory]
total_budget = "auto"
safety_margin = "5GiB"
eviction_min_idle = "5m"
pinned_budget = "50GiB"

[gpus]
devices = []
gpu_threads = 32
gpu_workers_per_device = 2

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0
partition_workers = 12

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 1

[logging]
level = "info"
"""


def test_sizes_and_durations() -> None:
    assert parse_size("50GiB") == 50 * GIB
    assert parse_size("626MiB") == 626 * MIB
    assert parse_size("10GB") == 10 * 10**9
    assert parse_size(4096) == 4096
    assert parse_size("1.5GiB") == 3 * GIB // 2
    assert parse_duration("5m") == 300
    assert parse_duration("300s") == 300
    assert parse_duration("250ms") == 0.25
    assert parse_duration("1h") == 3600
    assert parse_duration(60) == 60
    with pytest.raises(InputError, match="not a size"):
        parse_size("lots")
    with pytest.raises(InputError, match="not a duration"):
        parse_duration("5 fortnights")


def test_curio_example_config_loads(tmp_path: Path) -> None:
    p = tmp_path / "cuzk.toml"
    p.write_text(CURIO_EXAMPLE)
    cfg = load_config(p)
    assert cfg.daemon.listen == ("0.0.0.0:9820",)
    assert cfg.daemon.status_listen == "0.0.0.0:9821"
    assert cfg.srs.param_cache == "/data/zk/params"
    assert cfg.memory.safety_margin == 5 * GIB
    assert cfg.memory.eviction_min_idle == 300
    assert cfg.gpus.gpu_workers_per_device == 2
    assert cfg.scheduler.max_batch_wait_ms == 10000
    # "auto" is MemTotal minus the safety margin
    assert cfg.memory.resolve_total_budget() == detect_system_memory() - 5 * GIB


def test_defaults_are_curios_where_they_mean_the_same() -> None:
    cfg = Config()
    assert cfg.scheduler.max_batch_size == 1
    assert cfg.scheduler.max_batch_wait_ms == 10000
    assert cfg.gpus.gpu_workers_per_device == 2
    assert cfg.memory.total_budget == "auto"
    assert cfg.memory.safety_margin == 5 * GIB
    assert cfg.memory.eviction_min_idle == 300
    assert cfg.pipeline.synthesis_lookahead == 1
    assert cfg.pipeline.synthesis_concurrency == 1
    assert cfg.daemon.max_message_size == 128 * MIB
    assert cfg.daemon.listen[0].startswith("unix://")


def test_gpus_select_devices_and_a_probe_interval() -> None:
    cfg = config_from_dict({"gpus": {"devices": [1], "recovery_probe_interval": "90s"}})
    assert cfg.gpus.devices == (1,) and cfg.gpus.recovery_probe_interval == 90.0
    assert Config().gpus.devices == () and Config().gpus.recovery_probe_interval == 60.0


def test_explicit_budget_and_listen_list() -> None:
    cfg = config_from_dict(
        {"memory": {"total_budget": "256GiB"}, "daemon": {"listen": ["unix:///a", "[::1]:1"]}}
    )
    assert cfg.memory.resolve_total_budget() == 256 * GIB
    assert cfg.daemon.listen == ("unix:///a", "[::1]:1")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"gpus": {"gpu_workers_per_device": "2"}}, "expected an integer"),
        ({"gpus": {"gpu_workers_per_device": 0}}, "must be at least 1"),
        ({"memory": {"total_budget": "much"}}, "memory.total_budget"),
        ({"daemon": {"tls_cert_file": "c.pem"}}, "needs both a cert and a key"),
        ({"gpus": {"backend": "tpu"}}, "auto, cpu or cuda"),
        ({"daemon": {"allow_insecure_tcp": "yes"}}, "expected true or false"),
        ({"gpus": []}, r"\[gpus\]: expected a table"),
        ({"gpus": {"devices": [0, -1]}}, r"gpus.devices: -1 is not a GPU ordinal"),
        ({"gpus": {"devices": [1, 0, 1]}}, r"gpus.devices: lists GPU 1 more than once"),
        ({"gpus": {"devices": [True]}}, r"gpus.devices: expected a list of integers"),
        ({"gpus": {"devices": 0}}, r"gpus.devices: expected a list of integers"),
        ({"gpus": {"recovery_probe_interval": "soon"}}, r"gpus.recovery_probe_interval"),
        ({"pipeline": {"synthesis_processes": -1}}, r"pipeline.synthesis_processes: -1 is neg"),
        ({"pipeline": {"synthesis_processes": "many"}}, r"synthesis_processes: expected an int"),
    ],
)
def test_bad_configs_name_the_key(doc: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        config_from_dict(doc, "cuzk.toml")


def test_unreadable_and_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon\nlisten=1")
    with pytest.raises(InputError, match="not valid TOML"):
        load_config(bad)
    assert load_config(None) == Config()


def test_with_overrides_keeps_other_keys() -> None:
    cfg = Config().with_overrides(scheduler={"max_batch_size": 4})
    assert cfg.scheduler.max_batch_size == 4
    assert cfg.scheduler.max_batch_wait_ms == 10000


def test_unknown_keys_and_sections_warn_and_are_ignored(caplog) -> None:
    # A newer Curio config (or a typo) must not stop the daemon: Curio's ignores them too.
    doc = {
        "scheduler": {"max_batch_sise": 2, "max_batch_size": 3},
        "telemetry": {"endpoint": "x"},
        "synthesis": {"thread": 1},
    }
    with caplog.at_level(logging.WARNING, logger="cuzk.engine.config"):
        cfg = config_from_dict(doc, "cuzk.toml")
    assert cfg.scheduler.max_batch_size == 3
    assert cfg == Config().with_overrides(scheduler={"max_batch_size": 3})
    text = caplog.text
    assert "cuzk.toml: [scheduler] max_batch_sise: unknown, ignored" in text
    assert "max_batch_size, max_batch_wait_ms" in text  # the known keys, to spot a typo
    assert "cuzk.toml: [telemetry]: unknown, ignored" in text
    assert "cuzk.toml: [synthesis] thread: unknown, ignored" in text


def test_synthesis_processes_auto_is_a_pool_on_gpu_machines() -> None:
    """The default ("auto"): worker processes where the GPU workers launch their
    kernels from the daemon's interpreter, threads on a CPU-only daemon."""
    auto = Config().pipeline
    assert auto == config_from_dict({"pipeline": {"synthesis_processes": "auto"}}).pipeline
    assert auto.processes_for(on_gpu=True, cores=16) == 8
    assert auto.processes_for(on_gpu=True, cores=64) == 8
    assert auto.processes_for(on_gpu=True, cores=2) == 1
    assert auto.processes_for(on_gpu=False, cores=16) == 0
    for n in (0, 3):
        fixed = config_from_dict({"pipeline": {"synthesis_processes": n}}).pipeline
        assert fixed.processes_for(on_gpu=True, cores=16) == n


def test_max_parallel_synthesis_zero_is_curios_default() -> None:
    zero = config_from_dict({"pipeline": {"max_parallel_synthesis": 0}})
    assert zero.pipeline.parallel_synthesis_limit() == 18
    assert Config().pipeline.parallel_synthesis_limit() == 18
    two = config_from_dict({"pipeline": {"max_parallel_synthesis": 2}})
    assert two.pipeline.parallel_synthesis_limit() == 2


def test_a_config_file_gets_curios_defaults_and_no_file_the_builtin_ones(tmp_path: Path) -> None:
    p = tmp_path / "cuzk.toml"
    p.write_text('[memory]\ntotal_budget = "8GiB"\n')
    cfg = load_config(p)
    assert cfg.daemon.listen == ("unix:///run/curio/cuzk.sock",)
    assert cfg.srs.cache_dir() == Path("/data/zk/params")
    assert cfg.memory.resolve_total_budget() == 8 * GIB
    assert not cfg.daemon.allow_insecure_tcp
    # What the file says wins over Curio's defaults.
    p.write_text('[daemon]\nlisten = "127.0.0.1:9820"\n[srs]\nparam_cache = "/p"\n')
    cfg = load_config(p)
    assert cfg.daemon.listen == ("127.0.0.1:9820",)
    assert cfg.srs.cache_dir() == Path("/p")
    # No file: everything under $CUZK_HOME, as the README's make demo expects.
    bare = load_config(None)
    assert bare.daemon.listen == (f"unix://{cuzk_home() / 'cuzk.sock'}",)
    assert bare.srs.cache_dir() == cuzk_home() / "params"


def test_the_default_journal_follows_the_listen_address(tmp_path: Path, monkeypatch) -> None:
    """One daemon per GPU on a host: different addresses, different state; one
    address however it is spelt, one state (its lock then refuses the second)."""
    from cuzk.engine.config import DaemonConfig, state_dir

    monkeypatch.setenv("CUZK_HOME", str(tmp_path))

    def journal(*listen: str, **kw: str) -> Path:
        return DaemonConfig(listen=listen, **kw).journal_path()

    a, b = journal("127.0.0.1:9820"), journal("127.0.0.1:9821")
    assert a != b and a.name == b.name == "journal.sqlite"
    assert a.parent.parent == b.parent.parent == tmp_path / "daemons"
    assert a.parent.name.startswith("tcp_127.0.0.1_9820-")  # readable, then a hash
    assert journal("http://127.0.0.1:9820/") == a  # Rust's bench spelling: the same address
    assert journal("127.0.0.1:9820", "unix:///s") == a  # the first address decides
    gpu0 = journal("unix:///run/curio/cuzk-gpu0.sock")
    gpu1 = journal("unix:///run/curio/cuzk-gpu1.sock")
    assert gpu0 != gpu1 and gpu0 == journal("unix:/run/curio/cuzk-gpu0.sock")
    # Characters that would collide once made readable still get folders of their own.
    assert state_dir("unix:///a/b_c") != state_dir("unix:///a_b/c")
    assert journal("127.0.0.1:9820", journal="/j.sqlite") == Path("/j.sqlite")  # the key wins
    assert len(state_dir("unix:///" + "x/" * 500 + "s").name) < 80  # a name the disk takes


def test_default_config_path_is_curios_when_it_exists(tmp_path: Path, monkeypatch) -> None:
    assert Path("/data/zk/cuzk.toml") == config_module.CURIO_CONFIG_PATH  # Curio's unit's
    monkeypatch.setattr(config_module, "CURIO_CONFIG_PATH", tmp_path / "cuzk.toml")
    assert default_config_path() is None
    (tmp_path / "cuzk.toml").write_text("")
    assert default_config_path() == tmp_path / "cuzk.toml"


# --- holes found under attack (issue 15, item 8) ---------------------------------------------
@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"daemon": {"job_retention": -5}}, r"^cuzk.toml: daemon.job_retention: -5 is negative"),
        ({"daemon": {"shutdown_timeout": -1.5}}, r"daemon.shutdown_timeout: -1.5 is negative"),
        ({"memory": {"eviction_min_idle": -1}}, r"memory.eviction_min_idle: -1 is negative"),
        ({"daemon": {"job_retention": float("nan")}}, r"daemon.job_retention: nan is not finite"),
        ({"daemon": {"shutdown_timeout": float("inf")}}, r"shutdown_timeout: inf is not finite"),
        ({"daemon": {"grpc_threads": 0}}, r"^cuzk.toml: daemon.grpc_threads: must be at least 1"),
        ({"admission": {"max_pending_jobs": 0}}, r"admission.max_pending_jobs: must be at least 1"),
        (
            {"admission": {"max_pending_bytes_per_kind": "0"}},
            r"admission.max_pending_bytes_per_kind: must be at least 1 byte",
        ),
    ],
)
def test_config_holes_are_errors_naming_the_key(doc: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        config_from_dict(doc, "cuzk.toml")


def test_admission_and_dev_key_defaults_are_bounded() -> None:
    a = Config().admission
    assert (a.max_pending_jobs, a.max_pending_jobs_per_kind) == (1000, 500)
    assert (a.max_pending_bytes, a.max_pending_bytes_per_kind) == (4 * GIB, 2 * GIB)
    assert Config().srs.dev_key_disk_budget == 2 * GIB
    cfg = config_from_dict(
        {"admission": {"max_pending_bytes": "512MiB"}, "srs": {"dev_key_disk_budget": "1GiB"}}
    )
    assert cfg.admission.max_pending_bytes == 512 * MIB and cfg.srs.dev_key_disk_budget == GIB


def test_time_critical_vram_and_keys_loaded_at_start() -> None:
    assert Config().gpus.time_critical_bytes() is None  # "auto"
    cfg = config_from_dict(
        {"gpus": {"time_critical_vram": "2GiB"}, "srs": {"load_at_start": ["winning-32g"]}}
    )
    assert cfg.gpus.time_critical_bytes() == 2 * GIB
    assert cfg.srs.load_at_start == ("winning-32g",)
    assert config_from_dict({"gpus": {"time_critical_vram": 0}}).gpus.time_critical_bytes() == 0
    with pytest.raises(InputError, match=r"gpus\.time_critical_vram.*not a size"):
        config_from_dict({"gpus": {"time_critical_vram": "lots"}})
    with pytest.raises(InputError, match=r"srs\.load_at_start.*circuit ids"):
        config_from_dict({"srs": {"load_at_start": "porep-32g"}})
