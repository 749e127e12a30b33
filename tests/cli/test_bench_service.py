"""cuzk-bench against a daemon: Curio's report format, status, preload, evict, metrics."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from cuzk.cli.bench import main
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState
from cuzk.engine.kinds import demo
from cuzk.service.server import Servers


@contextmanager
def running_daemon(home: Path) -> Iterator[SimpleNamespace]:
    cfg = Config().with_overrides(
        daemon={"listen": [f"unix://{home}/cuzk.sock"], "journal": str(home / "j.sqlite")},
        srs={"param_cache": str(home / "params")},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
    )
    engine = Engine(cfg)
    engine.start()
    servers = Servers(engine)
    servers.start()
    try:
        yield SimpleNamespace(engine=engine, servers=servers)
    finally:
        servers.stop(0.5)
        engine.drain(10)
        engine.stop()


def test_batch_report_status_preload_evict_metrics(tmp_path: Path, capsys) -> None:
    with running_daemon(tmp_path) as d:
        addr = d.servers.bound[0]
        # Curio's order: the address before the subcommand.
        rc = main(["-a", addr, "batch", "-t", "demo", "--constraints", "300", "-c", "3", "-j", "2"])
        out = capsys.readouterr().out
        assert rc == 0, out
        lines = out.splitlines()
        assert lines[:4] == [
            "=== Batch Benchmark ===",
            "proof type:  demo",
            "count:       3",
            "concurrency: 2",
        ]
        rows = [x for x in lines if x.startswith("  [")]
        assert len(rows) == 3
        for row in rows:
            assert re.fullmatch(
                r"  \[[1-3]/3\] COMPLETED — \d+\.\ds \(prove=\d+ ms, queue=\d+ ms\)", row
            ), row
        summary = "\n".join(lines[lines.index("=== Batch Summary ===") :])
        assert re.search(r"total time:    \d+\.\ds", summary)
        assert "completed:     3" in summary and "failed:        0" in summary
        assert re.search(r"wall time:     avg=\d+\.\ds min=\d+\.\ds max=\d+\.\ds", summary)
        assert re.search(r"prove time:    avg=\d+\.\ds min=\d+\.\ds max=\d+\.\ds", summary)
        assert re.search(r"throughput:    \d+\.\d{3} proofs/min \(\d+\.\ds/proof\)", summary)
        assert re.search(
            r"sustained:     \d+\.\ds/proof \(first to last of 3 completions\)", summary
        )

        c = demo.circuit_for_constraints(300)
        cid = demo.circuit_id(c.rounds, c.words)
        for argv in (["-a", addr, "status"], ["status", "-a", addr], ["--addr", addr, "status"]):
            assert main(argv) == 0, argv
            out = capsys.readouterr().out
            assert "=== cuzk daemon status ===" in out and "proofs completed: 3" in out
            assert f"  {cid} (tier=HOT" in out
        # Given on both sides, the one after the subcommand is the one used.
        assert main(["-a", "unix:///nonexistent/cuzk.sock", "status", "-a", addr]) == 0
        capsys.readouterr()
        assert main(["evict", "-a", addr, "-c", cid]) == 0
        assert "evicted" in capsys.readouterr().out
        assert main(["preload", "-a", addr, "-c", cid]) == 0
        assert re.fullmatch(rf"{cid} loaded in \d+ ms\n", capsys.readouterr().out)
        assert main(["preload", "-a", addr, "-c", cid]) == 0
        assert capsys.readouterr().out == f"{cid} already loaded\n"
        assert main(["metrics", "-a", addr]) == 0
        text = capsys.readouterr().out
        assert "\ncuzk_proofs_completed_total 3.0\n" in text  # Curio's names
        assert '\ncuzk_proofs_completed{proof_kind="demo"} 3\n' in text

        assert main(["single", "-a", addr, "-t", "demo", "--constraints", "300"]) == 0
        out = capsys.readouterr().out
        assert "status:    COMPLETED" in out and "proof:     384 bytes" in out

        # Errors are reported, not raised.
        assert main(["single", "-a", addr, "-t", "porep"]) == 2
        assert "--c1 required" in capsys.readouterr().err
        assert main(["single", "-a", addr, "-t", "zk"]) == 2
        assert "unknown proof type" in capsys.readouterr().err
        c1 = tmp_path / "c1.json"
        c1.write_text('{"SectorNum": 1, "Phase1Out": "***", "SectorSize": 2048}')
        assert main(["single", "-a", addr, "-t", "porep", "--c1", str(c1)]) == 1
        assert "INVALID_ARGUMENT: c1.json: Phase1Out: not valid base64" in capsys.readouterr().err
        assert main(["preload", "-a", addr, "-c", "porep-32g"]) == 1


def test_stress_runs_mixed_priorities(tmp_path: Path, capsys) -> None:
    with running_daemon(tmp_path) as d:
        rc = main(
            [
                "stress",
                "-a",
                d.servers.bound[0],
                "--demo-rate",
                "8/1s",
                "--duration",
                "1s",
                "--constraints",
                "200",
                "--partitions",
                "1",
                "--seed",
                "3",
            ]
        )
        out = capsys.readouterr().out
        assert rc == 0, out
        assert "=== Stress Summary ===" in out
        m = re.search(r"demo +completed=(\d+) failed=0", out)
        assert m and int(m.group(1)) > 0
        assert int(m.group(1)) == d.engine.totals[JobState.COMPLETED]


def test_a_registered_proof_decides_the_sector_size_by_itself(tmp_path: Path) -> None:
    import argparse

    from cuzk.cli.bench_service import build_template

    vanilla = tmp_path / "v.json"
    vanilla.write_text('["AAEC"]')

    def template(**kw):
        base = dict(
            type="wpost", c1=None, vanilla=vanilla, registered_proof=0, sector_size=None,
            sector_num=1, miner_id=1000, randomness=None, comm_r_old=None, comm_r_new=None,
            comm_d_new=None, priority=None, constraints=0, partitions=0,
        )  # fmt: skip
        return build_template(argparse.Namespace(**{**base, **kw})).base

    assert template(registered_proof=10).sector_size == 0  # the daemon reads 10 as 2KiB
    assert template().sector_size == 32 << 30  # nothing said: 32GiB, as Curio's bench
    assert template(registered_proof=0, sector_size="2KiB").sector_size == 2048
    assert list(template().vanilla_proofs) == [b"\x00\x01\x02"]


# --- where cuzk-bench dials with no -a (issue 31 item 3, issue 35) ---------------------------
def test_the_default_address_is_where_a_daemon_on_its_defaults_listens(
    tmp_path: Path, monkeypatch
) -> None:
    import socket

    from cuzk.engine import config as config_module
    from cuzk.service import client as client_module
    from cuzk.service.client import default_address

    curio_sock = tmp_path / "run" / "cuzk.sock"
    monkeypatch.delenv("CUZK_ADDR", raising=False)
    monkeypatch.setenv("CUZK_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(config_module, "CURIO_CONFIG_PATH", tmp_path / "cuzk.toml")
    monkeypatch.setattr(client_module, "CURIO_LISTEN", f"unix://{curio_sock}")
    # Nothing anywhere: Curio's socket, where the daemon listens with no config file.
    assert default_address() == f"unix://{curio_sock}"
    # Only the built-in socket (a daemon run with --no-config) is there: that one.
    (tmp_path / "home").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "home" / "cuzk.sock"))
        assert default_address() == f"unix://{tmp_path / 'home' / 'cuzk.sock'}"
        curio_sock.parent.mkdir()
        with socket.socket(socket.AF_UNIX) as c:
            c.bind(str(curio_sock))
            assert default_address() == f"unix://{curio_sock}"  # Curio's first
    # Curio's config file, as the daemon reads it by default: its listen, dialled.
    (tmp_path / "cuzk.toml").write_text('[daemon]\nlisten = "0.0.0.0:9820"\n')
    assert default_address() == "127.0.0.1:9820"
    (tmp_path / "cuzk.toml").write_text("[memory]\n")  # no listen: Curio's default socket
    assert default_address() == "unix:///run/curio/cuzk.sock"
    monkeypatch.setenv("CUZK_ADDR", "127.0.0.1:1")
    assert default_address() == "127.0.0.1:1"


def test_an_unreachable_daemon_is_reported_with_the_address_tried(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("CUZK_ADDR", f"unix://{tmp_path}/nobody.sock")
    assert main(["status"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: UNAVAILABLE: no cuzk daemon answers at unix://{tmp_path}/")
    assert "(the default address)" in err and "cuzk-bench -a " in err and "CUZK_ADDR" in err
    assert "Traceback" not in err and "failed to connect" not in err and err.count("\n") == 1
    for command in (["metrics"], ["batch", "-t", "demo", "-c", "2"]):
        assert main(["-a", f"unix://{tmp_path}/other.sock", *command]) == 1
        out, err = capsys.readouterr()
        assert f"no cuzk daemon answers at unix://{tmp_path}/other.sock. Start one" in err
        assert "Batch Summary" not in out  # said once, not as proofs that failed


def test_batch_with_probes_reports_their_latency_and_both_throughputs(tmp_path: Path, capsys):
    with running_daemon(tmp_path) as d:
        addr = d.servers.bound[0]
        argv = ["-a", addr, "batch", "-t", "demo", "--constraints", "300", "-c", "3", "-j", "2"]
        probe = ["--probe", "demo", "--probe-constraints", "200", "--probe-every", "50ms"]
        rc = main(argv + probe + ["--probe-priority", "critical", "--baseline"])
        out = capsys.readouterr().out
        assert rc == 0, out
        assert out.count("=== Batch Summary ===") == 2  # the baseline, then with probes
        summary = out[out.index("=== Probe Summary ===") :]
        m = re.search(r"probes:        (\d+) completed, 0 failed, \d+ late", summary)
        assert m and int(m.group(1)) >= 1, summary
        assert re.search(
            r"latency:       p50=\d+\.\d{3}s p95=\d+\.\d{3}s p99=\d+\.\d{3}s max=\d+\.\d{3}s",
            summary,
        )
        assert re.search(
            r"throughput:    with probes \d+\.\d\ds/proof, without \d+\.\d\ds/proof "
            r"\(baseline run\): [+-]\d+\.\d%",
            summary,
        )
        # the probes' priority reached the daemon: CRITICAL jobs were submitted
        text = d.engine.metrics_text()
        assert re.search(
            r'cuzk_jobs_submitted_total\{priority="CRITICAL",proof_kind="demo"\} [1-9]', text
        )
        assert main([*argv[:3], "-t", "demo", "--baseline"]) == 2  # --baseline needs --probe
        assert "--baseline" in capsys.readouterr().err
        assert main([*argv, "--probe", "demo", "--probe-every", "soon"]) == 2
        assert "--probe-every" in capsys.readouterr().err
        assert main([*argv, "--probe", "winning"]) == 2
        assert "--probe-vanilla required for winning probes" in capsys.readouterr().err


def test_percentiles_are_nearest_rank() -> None:
    from cuzk.bench.load import percentile

    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (
        50,
        99,
        100,
    )
    assert percentile([3.0], 99) == 3.0
