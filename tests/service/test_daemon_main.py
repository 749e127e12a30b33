"""How cuzk-daemon (and ``cuzk`` with no subcommand) finds its config and tells
a daemon invocation from a tool command."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.engine.config import Config
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
    assert config_path(parse([])) is None  # no file there: Curio's defaults, as Rust
    assert configure(parse([])).daemon.listen == ("unix:///run/curio/cuzk.sock",)
    assert configure(parse([])).srs.cache_dir() == Path("/data/zk/params")
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


def test_a_missing_config_file_means_curios_defaults_with_a_warning(tmp_path: Path, caplog) -> None:
    """As Curio's daemon: under systemd's Restart=on-failure an exit would loop."""
    from cuzk.service.daemon_main import configure_from

    missing = tmp_path / "nope.toml"
    with caplog.at_level(logging.WARNING):
        cfg, source = configure_from(build_parser().parse_args(["--config", str(missing)]))
    assert cfg.daemon.listen == ("unix:///run/curio/cuzk.sock",)
    assert cfg.srs.cache_dir() == Path("/data/zk/params")
    assert f"{missing}: config file not found; running on Curio's defaults" in caplog.text
    assert source == f"none ({missing} not found): Curio's defaults"
    # A file that exists and is bad is still an error (exit 2), not a fallback.
    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon\n")
    from cuzk.errors import InputError

    with pytest.raises(InputError, match="not valid TOML"):
        configure_from(build_parser().parse_args(["--config", str(bad)]))


# --- under attack (issue 15, items 6 and 8) ---------------------------------------------------
def make_cert(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt"),
            *("ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def listener_problem(tmp_path: Path, problem: str) -> tuple[dict, str]:
    """[daemon] keys with one problem in them, and what the error must say."""
    token = tmp_path / "token"
    token.write_text("0123456789abcdef-long-enough")
    base = {"listen": ["127.0.0.1:0"], "auth_token_file": str(token)}
    if problem == "short token":
        token.write_text("short")
        return base, r"auth_token_file: the token must be at least 16 characters"
    if problem == "socket folder cannot be made":
        (tmp_path / "file").write_text("")
        return (
            {"listen": [f"unix://{tmp_path}/file/run/cuzk.sock"]},
            r"\[daemon\] listen: unix://.*/file/run/cuzk.sock: cannot make its folder "
            r".*--no-config",
        )
    if problem == "missing token":
        return {**base, "auth_token_file": str(tmp_path / "nope")}, r"auth_token_file: cannot read"
    cert, key = make_cert(tmp_path, "a")
    _, other_key = make_cert(tmp_path, "b")
    if problem == "tls mismatch":
        return (
            {**base, "tls_cert_file": str(cert), "tls_key_file": str(other_key)},
            r"tls_key_file: .*b\.key does not match tls_cert_file .*a\.crt",
        )
    if problem == "not a certificate":
        return (
            {**base, "tls_cert_file": str(token), "tls_key_file": str(key)},
            r"tls_cert_file: .*token is not a PEM certificate",
        )
    raise AssertionError(problem)


@pytest.mark.parametrize(
    "problem",
    [
        "short token",
        "missing token",
        "tls mismatch",
        "not a certificate",
        "socket folder cannot be made",
    ],
)
def test_listener_problems_stop_the_daemon_before_the_journal_is_touched(
    tmp_path: Path, problem: str, caplog
) -> None:
    import time

    from cuzk.circuits.demo import DemoCircuit
    from cuzk.engine.jobs import Job, JobState, ProofKind, ProofRequest
    from cuzk.engine.journal import Journal
    from cuzk.engine.kinds import demo
    from cuzk.service.daemon_main import run

    journal = tmp_path / "j.sqlite"
    j = Journal(journal)
    req = ProofRequest(
        ProofKind.DEMO, "waiting", vanilla_proof=demo.make_vanilla(DemoCircuit(20, 1), 1)
    )
    j.insert(Job("waiting", req, req.effective_priority(), time.time(), req.digest()))
    j.close()
    daemon, message = listener_problem(tmp_path, problem)
    cfg = Config().with_overrides(
        daemon={**daemon, "journal": str(journal)},
        srs={"param_cache": str(tmp_path / "params")},
        gpus={"backend": "cpu"},
        memory={"total_budget": "1GiB"},
    )
    with caplog.at_level(logging.INFO):
        assert run(cfg, "cuzk.toml") == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and re.search(message, errors[0]), errors
    assert "Failed to bind" not in caplog.text
    assert "resumed" not in caplog.text and "engine started" not in caplog.text
    (rec,) = Journal(journal).records()
    assert rec.state == JobState.QUEUED and rec.request == req  # for the daemon that will run


def test_text_log_lines_cannot_be_forged(capsys) -> None:
    """A client's text (a request id, a field of its input) cannot start a log line."""
    from cuzk.service.daemon_main import _setup_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        _setup_logging("info", "")
        logging.getLogger("cuzk.engine.engine").info(
            "job %s accepted", "x\n2026-12-01 12:00:00,000 ERROR cuzk: forged\r\x1b[2J"
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "accepted" in err and "\\n2026-12-01" in err and "\\r\\x1b[2J" in err


def test_a_token_file_others_can_read_is_used_with_a_warning(tmp_path: Path, caplog) -> None:
    from cuzk.service.server import read_token

    token = tmp_path / "token"
    token.write_text("a" * 32 + "\n")
    token.chmod(0o600)
    with caplog.at_level("WARNING"):
        assert read_token(str(token)) == "a" * 32
    assert not caplog.records
    token.chmod(0o644)
    with caplog.at_level("WARNING"):
        assert read_token(str(token)) == "a" * 32
    assert "can be read by other users (mode 644)" in caplog.text and "chmod 600" in caplog.text
