"""An operator's first hour with cuzk-bench (issue 35): the proof verified and
written, file flags named in errors, the proof types listed in --help, no GPU
words on the CPU backend, evict and status on one size, progress on a terminal."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest
from test_bench_service import running_daemon

from cuzk.cli._progress import Ticker
from cuzk.cli.bench import main
from cuzk.cli.main import main as cuzk_main
from cuzk.engine.kinds import demo


def test_single_says_verified_and_writes_the_proof(tmp_path: Path, capsys) -> None:
    with running_daemon(tmp_path) as d:
        addr = d.servers.bound[0]
        out, hexfile = tmp_path / "proof.bin", tmp_path / "proof.hex"
        argv = ["single", "-a", addr, "-t", "demo", "--constraints", "300"]
        assert main([*argv, "--out", str(out), "--out-hex", str(hexfile)]) == 0
        text = capsys.readouterr().out
        assert "verified:  yes (the daemon verifies every proof before it returns it)" in text
        proof = out.read_bytes()
        assert len(proof) == 384  # two partitions of 192 bellperson bytes
        assert hexfile.read_text() == proof.hex() + "\n"
        assert f"written:   {out} (bellperson bytes, 384 bytes)" in text
        assert f"written:   {hexfile} (hex, 769 bytes)" in text
        # on the CPU backend: no GPU words
        timings = next(line for line in text.splitlines() if line.startswith("timings:"))
        assert re.search(r", cpu=\d+ ms\)$", timings) and "gpu" not in timings
        assert main(["status", "-a", addr]) == 0
        status = capsys.readouterr().out
        assert "host memory:" in status and "Devices (CPU backend):" in status
        assert not re.search(r"GPU|VRAM|pinned", status), status
        bad = tmp_path / "no" / "such" / "dir" / "p.bin"
        assert main([*argv, "--out", str(bad)]) == 2
        assert f"--out {bad}:" in capsys.readouterr().err


def test_evict_says_the_size_status_lists(tmp_path: Path, capsys) -> None:
    with running_daemon(tmp_path) as d:
        addr = d.servers.bound[0]
        c = demo.circuit_for_constraints(300)
        cid = demo.circuit_id(c.rounds, c.words)
        assert main(["preload", "-a", addr, "-c", cid]) == 0
        capsys.readouterr()
        listed = {s.circuit_id: s.size_bytes for s in d.engine.keys.status()}[cid]
        assert main(["evict", "-a", addr, "-c", cid]) == 0
        out = capsys.readouterr().out
        m = re.fullmatch(
            rf"{cid} evicted, (\d+) bytes of memory freed \(the key's (\d+) bytes, as status "
            r"lists it, with its circuit's matrices and load staging\)\n",
            out,
        )
        assert m and int(m.group(2)) == listed and int(m.group(1)) >= listed


def test_file_flag_errors_name_the_flag(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope.json"
    addr = f"unix://{tmp_path}/none.sock"
    assert main(["single", "-a", addr, "-t", "porep", "--c1", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: --c1 {missing}: No such file or directory\n"
    assert main(["single", "-a", addr, "-t", "winning", "--vanilla", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: --vanilla {missing}: No such file or directory\n"
    argv = ["stress", "-a", addr, "--duration", "1s", "--porep-rate", "1/1s"]
    assert main([*argv, "--porep-c1", str(missing)]) == 2
    assert f"--porep-c1 {missing}: No such file" in capsys.readouterr().err


def test_registered_proof_help_lists_the_values(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["single", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--registered-proof N" in text
    for part in (
        "winning (RegisteredPoStProof): 0-4",
        "wpost: 5-9 (V1), 10-14 (V1_1)",
        "snap (RegisteredUpdateProof): 0-4",
        "porep (RegisteredSealProof",
    ):
        assert part in text, part


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines_on_a_terminal_only() -> None:
    term = FakeTerminal()
    with Ticker("proving (demo, on the CPU)", term, interval=0.01):
        time.sleep(0.05)
    text = term.getvalue()
    assert text.count("\r\033[K  … proving (demo, on the CPU): 0 s") >= 2
    assert text.endswith("\r\033[K")
    pipe = io.StringIO()
    with Ticker("proving", pipe, interval=0.01):
        time.sleep(0.03)
    assert pipe.getvalue() == ""


def test_gen_params_shows_progress_on_a_terminal(tmp_path: Path, monkeypatch, capsys) -> None:
    """Its two long steps (the circuit's compile, the parameters' generation)
    each show a progress line; stand-ins for both keep the test fast."""
    import sys
    from types import SimpleNamespace

    from cuzk.cli import cmd_params
    from cuzk.engine.kinds import default_registry

    real = default_registry().for_circuit("winning-2k")

    def r1cs(cid):
        time.sleep(0.05)
        return "r1cs"

    def write(r1cs, files, out, seed, points):
        time.sleep(0.05)
        (out / files.params).write_bytes(b"p")
        return out / files.params

    handler = SimpleNamespace(key_files=real.key_files, r1cs=r1cs)
    monkeypatch.setattr(
        cmd_params, "default_registry", lambda: SimpleNamespace(for_circuit=lambda cid: handler)
    )
    monkeypatch.setattr(cmd_params, "write_dev_params", write)
    monkeypatch.setattr(cmd_params, "Ticker", lambda what: Ticker(what, term, interval=0.01))
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    argv = ["gen-params", "winning-post", "--sector-size", "2KiB", "--out", str(tmp_path)]
    assert cuzk_main([*argv, "--backend", "cpu"]) == 0
    assert "  … compiling the winning-2k circuit: 0 s" in term.getvalue()
    assert f"  … generating winning-2k development key into {tmp_path}" in term.getvalue()
    assert "INSECURE development key written" in capsys.readouterr().out
