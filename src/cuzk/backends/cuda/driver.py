"""What the host's NVIDIA driver shows, without CuPy: ``nvidia-smi``.

Which CuPy a host needs follows from the CUDA version its driver supports
(``nvidia-smi``'s header: "CUDA Version: 13.0"): the ``cuda12`` or ``cuda13``
extra of ``pyproject.toml``, whose pins are :data:`EXTRAS` here (a test keeps
the two equal). The daemon's backend choice, ``cuzk doctor`` and ``make demo``
read the driver through this module.

It imports nothing but the standard library, so that ``make`` can run it
before the virtual environment exists::

    python3 src/cuzk/backends/cuda/driver.py extra     # cuda12, cuda13, or nothing
    .venv/bin/python src/cuzk/backends/cuda/driver.py ensure  # install it unless CuPy is there
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

# The pins of pyproject.toml's GPU extras (tests/backends/cuda/test_driver.py
# checks them against the file).
EXTRAS = {
    "cuda12": ("cupy-cuda12x==14.2.0", "nvidia-ml-py==13.615.71"),
    "cuda13": ("cupy-cuda13x==14.2.0", "nvidia-ml-py==13.615.71"),
}
_CUDA = re.compile(r"CUDA Version\s*:\s*(\d+)\.(\d+)")
_DRIVER = re.compile(r"Driver Version\s*:\s*([0-9.]+)")
QUERY = "index,name,memory.total,memory.free"

# Runs a command, returns its stdout (None: not found, failed or timed out).
Runner = Callable[[list[str]], "str | None"]


def run_command(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class DriverInfo:
    """The driver as ``nvidia-smi`` shows it; ``present`` False: no nvidia-smi,
    or it failed (no driver, no GPU)."""

    present: bool
    driver_version: str | None = None
    cuda_version: tuple[int, int] | None = None
    gpus: tuple[Gpu, ...] = field(default_factory=tuple)

    @property
    def has_gpu(self) -> bool:
        return self.present and bool(self.gpus)

    @property
    def cuda(self) -> str:
        if self.cuda_version is None:
            return "unknown"
        return f"{self.cuda_version[0]}.{self.cuda_version[1]}"

    @property
    def extra(self) -> str | None:
        """The extra this driver needs (None: no driver, or CUDA older than 12)."""
        return extra_for(self.cuda_version)


def extra_for(cuda_version: tuple[int, int] | None) -> str | None:
    if cuda_version is None or cuda_version[0] < 12:
        return None
    return "cuda12" if cuda_version[0] == 12 else "cuda13"


def parse_header(text: str) -> tuple[str | None, tuple[int, int] | None]:
    """The driver and CUDA versions of ``nvidia-smi``'s table header."""
    d = _DRIVER.search(text)
    c = _CUDA.search(text)
    return (d.group(1) if d else None, (int(c.group(1)), int(c.group(2))) if c else None)


def parse_gpus(text: str) -> tuple[Gpu, ...]:
    """``nvidia-smi --query-gpu=index,name,memory.total,memory.free
    --format=csv,noheader,nounits`` lines; a line that does not parse is skipped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            out.append(Gpu(int(parts[0]), parts[1], int(parts[2]), int(parts[3])))
        except ValueError:
            continue
    return tuple(out)


def probe(run: Runner | None = None) -> DriverInfo:
    """What ``nvidia-smi`` says of this host (``run``: a stand-in in tests)."""
    run = run or run_command
    header = run(["nvidia-smi"])
    if header is None:
        return DriverInfo(False)
    driver, cuda = parse_header(header)
    listing = run(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"])
    return DriverInfo(True, driver, cuda, parse_gpus(listing or ""))


def pip_command(extra: str | None, python: str | None = None) -> str:
    """The exact command that installs CuPy for ``extra`` into ``python``'s
    environment (this interpreter's by default); with no extra known, both."""
    py = python or sys.executable or "python3"
    if extra in EXTRAS:
        return f"{py} -m pip install {' '.join(EXTRAS[extra])}"
    return " or ".join(
        f"{py} -m pip install {' '.join(pins)} (CUDA {name[4:]} driver)"
        for name, pins in EXTRAS.items()
    )


def ensure(
    info: DriverInfo,
    has_cupy: bool,
    install: Callable[[list[str]], int],
    say: Callable[[str], None],
    python: str | None = None,
) -> int:
    """``make demo``'s GPU step: on a host whose driver shows a GPU and whose
    environment lacks CuPy, install the extra its CUDA version needs
    (``install``: runs a command, gives its exit status). Nothing on a host
    without a GPU. A failed install is said, and the demo goes on on the CPU;
    returns 0 either way (the daemon says which backend it chose and why)."""
    if not info.has_gpu:
        return 0
    if has_cupy:
        return 0
    names = ", ".join(sorted({g.name for g in info.gpus}))
    if info.extra is None:
        say(
            f"WARNING: the driver shows {names} with CUDA {info.cuda}; CuPy needs CUDA 12 "
            "or later: update the NVIDIA driver. Proving on the CPU."
        )
        return 0
    py = python or sys.executable
    cmd = [py, "-m", "pip", "install", "--quiet", *EXTRAS[info.extra]]
    shown = " ".join(cmd)
    say(f"GPU: {names}, driver CUDA {info.cuda}: installing the {info.extra} extra ({shown})")
    if install(cmd) != 0:
        say(
            f"WARNING: the install failed; the demo proves on the CPU. Install CuPy with: "
            f"{pip_command(info.extra, py)}"
        )
    return 0


def _has_cupy() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    info = probe()
    if args == ["extra"]:
        if info.has_gpu and info.extra:
            print(info.extra)
        return 0
    if args == ["ensure"]:
        return ensure(
            info,
            _has_cupy(),
            lambda cmd: subprocess.run(cmd, check=False).returncode,
            lambda text: print(text, flush=True),
        )
    print(f"driver: {info.driver_version or 'none'}, CUDA {info.cuda}, GPUs {len(info.gpus)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
