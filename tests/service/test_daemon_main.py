"""How cuzk-daemon (and ``cuzk`` with no subcommand) finds its config and tells
a daemon invocation from a tool command."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.service.daemon_main import build_parser, config_path, configure, is_daemon_command


@pytest.mark.parametrize(
    ("argv", "daemon"),
    [
        ([], True),  # Curio's docs: a bare `cuzk` runs the daemon on the default config
        (["--config", "/data/zk/cuzk.toml"], True),  # Curio's systemd unit
        (["-c", "x.toml", "--listen", "unix:///run/curio/cuzk.sock"], True),
        (["--config=x.toml", "--log-level", "debug"], True),
        (["--listen", "127.0.0.1:9820", "-l", "unix:///s", "--status-listen", "h:1"], True),
        (["--no-config"], True),
        (["demo"], False),
        (["--log-level", "DEBUG", "demo"], False),
        (["circuit-info", "porep", "--sector-size", "2KiB"], False),
        (["--help"], False),
        (["--config", "x.toml", "verify"], False),
    ],
)
def test_cuzk_runs_the_daemon_only_with_daemon_options(argv: list[str], daemon: bool) -> None:
    assert is_daemon_command(argv) is daemon


def test_config_path_prefers_the_flag_then_curios_file(tmp_path: Path, monkeypatch) -> None:
    curio = tmp_path / "cuzk.toml"
    monkeypatch.setattr(config_module, "CURIO_CONFIG_PATH", curio)
    parse = build_parser().parse_args
    assert config_path(parse([])) is None  # no file there: built-in defaults
    curio.write_text('[daemon]\nlisten = "unix:///tmp/from-curio.sock"\n')
    assert config_path(parse([])) == curio
    assert configure(parse([])).daemon.listen == ("unix:///tmp/from-curio.sock",)
    assert config_path(parse(["--no-config"])) is None
    assert configure(parse(["--no-config"])).daemon.listen[0].endswith("/cuzk.sock")
    other = tmp_path / "other.toml"
    other.write_text("")
    assert config_path(parse(["--config", str(other)])) == other
    cfg = configure(parse(["--config", str(other), "--listen", "127.0.0.1:1", "-l", "unix:///s"]))
    assert cfg.daemon.listen == ("127.0.0.1:1", "unix:///s")
    assert cfg.srs.cache_dir() == Path("/data/zk/params")  # Curio's default for a file
