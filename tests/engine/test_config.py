"""Config: Curio's cuzk.toml keys load, ours are typed, typos are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuzk.engine.config import (
    GIB,
    MIB,
    Config,
    config_from_dict,
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


def test_explicit_budget_and_listen_list() -> None:
    cfg = config_from_dict(
        {"memory": {"total_budget": "256GiB"}, "daemon": {"listen": ["unix:///a", "[::1]:1"]}}
    )
    assert cfg.memory.resolve_total_budget() == 256 * GIB
    assert cfg.daemon.listen == ("unix:///a", "[::1]:1")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"scheduler": {"max_batch_sise": 2}}, r"\[scheduler\] max_batch_sise: unknown key"),
        ({"nope": {}}, "unknown section"),
        ({"gpus": {"gpu_workers_per_device": "2"}}, "expected an integer"),
        ({"gpus": {"gpu_workers_per_device": 0}}, "must be at least 1"),
        ({"memory": {"total_budget": "much"}}, "memory.total_budget"),
        ({"daemon": {"tls_cert_file": "c.pem"}}, "needs both a cert and a key"),
        ({"gpus": {"backend": "tpu"}}, "auto, cpu or cuda"),
        ({"synthesis": {"thread": 1}}, "unknown key"),
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
