"""The live status page (issue 15) in a real headless Chromium (Debian's ``chromium``,
which ``make test`` installs when it runs as root): the page renders, its plots carry a
running daemon's data, and a screenshot is kept as a test artifact.

Chromium loads the page from the daemon's status listener, lets it poll /status for a
few seconds of virtual time (``--virtual-time-budget``), then dumps its DOM (read here)
or a screenshot (kept under ``$CUZK_TEST_ARTIFACTS``, default ``test-artifacts/`` in the
checkout; the test prints where).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from daemon_harness import running_daemon

from cuzk.circuits.demo import DemoCircuit
from cuzk.circuits.post.config import config_for_registered_proof
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import write_sector_proof
from cuzk.engine.kinds import demo
from cuzk.service.http import StatusServer, status_page
from cuzk.service.proto import proving_pb2 as pb

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CUZK_TEST_ARTIFACTS", REPO / "test-artifacts"))
TOKEN = "page-token-0123456789abcdef"
SIZE = (1400, 1800)

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed: `make test` installs Debian's package with apt-get when "
    "it runs as root; elsewhere run `apt-get install chromium` to test the status page",
)


def chromium(url: str, *action: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with a new empty profile, after 6 s of page time."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="cuzk-chromium-") as profile:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={SIZE[0]},{SIZE[1]}",
                "--virtual-time-budget=6000",
                *action,
                url,
            ],
            capture_output=True,
            timeout=180,
            check=False,
        )


def plots(dom: str) -> dict[str, dict[str, str]]:
    """Each plot's attributes, by name (data-points: the points drawn over all series)."""
    out = {}
    for tag in re.findall(r"<svg [^>]*>", dom):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        if "data-plot" in attrs:
            out[attrs["data-plot"]] = attrs
    return out


def legend(dom: str, name: str) -> str:
    m = re.search(rf'<div class="legend" id="legend-{name}">(.*?)</div>', dom, re.S)
    assert m, name
    return html.unescape(re.sub(r"<[^>]+>", " ", m.group(1)))


def test_the_page_is_one_self_contained_file() -> None:
    page = status_page().decode()
    assert page.startswith("<!DOCTYPE html>")
    # nothing fetched from elsewhere: no external script, style, font or image
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    assert 'fetch("/status?history_since="' in page


def winning_request() -> pb.SubmitProofRequest:
    """A well-formed WinningPoSt 2KiB request: it fails, the daemon has no parameters."""
    cfg = config_for_registered_proof(0)
    proof = write_sector_proof(generate_sector_proof(cfg, bytes(32), 100, 0))
    return pb.SubmitProofRequest(
        proof_kind=pb.WINNING_POST, vanilla_proofs=[proof], randomness=bytes(32)
    )


def demo_request(priority: int) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(
        proof_kind=pb.CUZK_DEMO,
        priority=priority,
        vanilla_proof=demo.make_vanilla(DemoCircuit(20, 1)),
    )


@needs_chromium
def test_the_page_plots_a_running_daemon_in_chromium(tmp_path: Path, capsys) -> None:
    (tmp_path / "token").write_text(TOKEN)
    with running_daemon(
        tmp_path,
        daemon={"status_sample_interval": "500ms"},
        # NORMAL demo jobs wait in the batch collector: a queue to plot
        scheduler={"max_batch_size": 16, "max_batch_wait_ms": 600_000},
    ) as d:
        server = StatusServer(d.engine, "127.0.0.1:0", TOKEN)
        server.start()
        try:
            c = d.client()
            for _ in range(3):  # HIGH: never held; proven and verified
                assert c.prove(demo_request(pb.HIGH)).status == pb.AwaitProofResponse.COMPLETED
                time.sleep(0.6)
            for _ in range(2):
                assert c.prove(winning_request()).status == pb.AwaitProofResponse.FAILED
            queued = [c.submit(demo_request(pb.NORMAL)).job_id for _ in range(2)]
            time.sleep(1.5)  # a few samples with the queue in them
            base = f"http://{server.address}/"

            shown = chromium(base + f"#token={TOKEN}", "--dump-dom")
            dom = shown.stdout.decode()
            assert shown.returncode == 0 and "</html>" in dom, shown.stderr.decode()[-2000:]
            samples = int(re.search(r'<body[^>]*data-samples="(\d+)"', dom).group(1))
            assert samples >= 5
            p = plots(dom)
            assert set(p) == {"queue", "proofs", "latency", "budgets", "keys"}
            for name, attrs in p.items():
                assert int(attrs["data-points"]) > 0, (name, attrs)
            assert "demo (2 now)" in legend(dom, "queue")
            assert "completed (3)" in legend(dom, "proofs") and "failed (2)" in legend(
                dom, "proofs"
            )
            assert "resident (1," in legend(dom, "keys")
            assert "host (" in legend(dom, "budgets")
            assert re.search(r'id="completed">3<', dom) and re.search(r'id="failed">2<', dom)
            assert "demo-r20-w1" in dom  # the keys table
            devices = dom[dom.index('id="devices"') : dom.index('id="keys"')]
            assert "<td>cpu</td><td>healthy</td>" in devices  # the devices table

            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            png = ARTIFACTS / "status-page.png"
            png.unlink(missing_ok=True)
            shot = chromium(base + f"#token={TOKEN}", f"--screenshot={png}")
            assert shot.returncode == 0, shot.stderr.decode()[-2000:]
            data = png.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            assert struct.unpack(">II", data[16:24]) == SIZE  # IHDR: width, height
            with capsys.disabled():
                print(f"\nstatus page screenshot: {png}")

            # without the token, the page asks for it and shows no state
            locked = chromium(base, "--dump-dom").stdout.decode()
            assert "bearer token needed" in locked
            assert all(int(a.get("data-points", "0")) == 0 for a in plots(locked).values())
            for job_id in queued:
                c.cancel(job_id)
        finally:
            server.stop()
