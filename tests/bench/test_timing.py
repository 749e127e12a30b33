"""The benchmarks' shared clocks and host-memory readers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from cuzk.bench import hostmem, timing


def test_stage_clock_sums_a_repeated_stage() -> None:
    clock = timing.StageClock()
    t = time.perf_counter()
    t = clock.mark("a", t - 1.0)  # one second charged to "a"
    t = clock.mark("b", t)
    clock.mark("a", t - 0.5)
    assert set(clock.seconds) == {"a", "b"}
    assert 1.5 <= clock.seconds["a"] < 1.6 and clock.seconds["b"] < 0.1
    assert clock.rounded(1)["a"] in (1.5, 1.6)


def test_cpu_seconds_grow_with_work() -> None:
    before = timing.cpu_seconds()
    x = 0
    while timing.cpu_seconds() - before < 0.02:
        x += 1
    assert timing.cpu_seconds() > before and timing.cpu_seconds(children=True) >= 0


def test_status_fields_of_this_process_and_of_none() -> None:
    rss, anon, hwm = hostmem.status_kib(os.getpid(), "VmRSS", "RssAnon", "VmHWM")
    assert 0 < anon <= rss <= hwm
    assert hostmem.status_kib("self", "VmRSS")[0] > 0
    assert hostmem.status_kib(2**22 + 12345, "VmRSS", "RssAnon") == (0, 0)
    assert hostmem.peak_rss_mib() * 1024 >= hwm * 0.9


def test_peak_of_finished_children() -> None:
    """``peak_rss_mib(children=True)``: the largest finished child's peak."""
    code = "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert hostmem.peak_rss_mib(children=True) >= 64


def test_watch_samples_another_process_tree_until_it_ends() -> None:
    """``python -m cuzk.bench.hostmem PID`` (the device scripts' daemon sampler):
    the peak of another process and its children, reported when it exits."""
    import subprocess
    import sys

    code = (
        "import subprocess, sys, time; x = bytearray(48 << 20); x[::4096] = b'1' * len(x[::4096]);"
        "subprocess.run([sys.executable, '-c', "
        "\"y = bytearray(32 << 20); y[::4096] = b'1' * len(y[::4096]); import time; "
        'time.sleep(1.5)"]); time.sleep(0.3)'
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    so_far: list[dict[str, int]] = []
    try:
        report = hostmem.watch(child.pid, interval=0.1, progress=so_far.append, every=0.5)
    finally:
        child.wait()
    assert report["host_peak_anon_mib"] >= 48 + 32
    assert report["host_peak_rss_mib"] >= report["host_peak_anon_mib"]
    # the peaks so far, while it ran (what a run cut short leaves behind)
    peaks = [r["host_peak_anon_mib"] for r in so_far]
    assert peaks and peaks == sorted(peaks)
    assert so_far[-1]["host_peak_anon_mib"] <= report["host_peak_anon_mib"]


def test_watch_says_what_the_peak_was_made_of(tmp_path) -> None:
    """The report splits the peak of ``VmRSS`` into anonymous, mapped-file and
    shared parts (a streamed key's pinned buffers and a mapped matrix cache
    are told apart from private memory), and the progress lines carry the
    last sample: a timeline of a run's memory."""
    data = tmp_path / "mapped.bin"
    data.write_bytes(b"\1" * (40 << 20))
    code = (
        f"import mmap, time; f = open({str(data)!r}, 'rb');"
        "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ);"
        "s = sum(m[i] for i in range(0, len(m), 4096));"
        "sh = mmap.mmap(-1, 24 << 20); sh[::4096] = b'2' * len(sh[::4096]);"
        "a = bytearray(16 << 20); a[::4096] = b'3' * len(a[::4096]); time.sleep(1.0)"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    lines: list[dict] = []
    try:
        report = hostmem.watch(child.pid, interval=0.1, progress=lines.append, every=0.3)
    finally:
        child.wait()
    parts = report["at_peak_rss_mib"]
    assert parts["file"] >= 40 and parts["shmem"] >= 24 and parts["anon"] >= 16
    assert sum(parts.values()) <= report["host_peak_rss_mib"] + 1
    assert lines and all(line["now_rss_mib"] >= line["now_anon_mib"] for line in lines)
    assert max(line["now_file_mib"] for line in lines) >= 40
