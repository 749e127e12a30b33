"""``cuzk doctor`` and ``cuzk kernels``: what a host offers the prover, and its
CUDA kernels built once.

- ``cuzk doctor [--config FILE]``: the NVIDIA driver and its CUDA version
  (``nvidia-smi``), CuPy, each GPU and its free memory, the kernel cache, the
  parameter cache (each circuit's ``.params`` / ``.vk`` present or not), and the
  backend the daemon would use with that config, and why. Exit 0, or 1 when
  the config's backend cannot be met (``cuda`` without CuPy).
- ``cuzk kernels [--nvcc DIR] [--arch N]``: every kernel module the code
  loads (:data:`cuzk.backends.cuda.kernels.PREBUILD_DEFAULT`), with
  progress and the cache's path: compiled with NVRTC into the kernel cache on
  this host's GPU, or with ``--nvcc DIR`` built by nvcc as cubins into DIR (no
  GPU needed; ``CUZK_KERNEL_PREBUILT=DIR`` then loads them).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from cuzk.backends import choose_backend
from cuzk.backends.cuda import cupy_device_count, driver
from cuzk.circuits.parameters import parameter_files
from cuzk.engine.config import load_config
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="driver, CUDA, CuPy, GPUs, caches and the backend chosen")
    p.add_argument("--config", type=Path, default=None, help="the daemon's cuzk.toml")
    p.set_defaults(func=run_doctor)

    k = sub.add_parser("kernels", help="build every CUDA kernel module the code loads, once")
    k.add_argument(
        "--nvcc",
        type=Path,
        default=None,
        metavar="DIR",
        help="build cubins with nvcc into DIR (no GPU needed) instead of NVRTC's cache",
    )
    k.add_argument("--arch", default=None, help="with --nvcc: the SM, e.g. 90 (default 90)")
    k.add_argument("--jobs", type=int, default=2, help="with --nvcc: builds at once")
    k.set_defaults(func=run_kernels)


def _cupy_line() -> tuple[str, int | None]:
    count = cupy_device_count()
    if count is None:
        return "not installed", None
    import cupy

    dist = next((d for d in ("cupy-cuda13x", "cupy-cuda12x", "cupy") if _installed(d)), "cupy")
    return f"{cupy.__version__} ({dist}), sees {count} GPU(s)", count


def _installed(dist: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _folder_line(path: Path, pattern: str = "*") -> str:
    if not path.is_dir():
        return f"{path} (not made yet)"
    files = [p for p in path.rglob(pattern) if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    return f"{path} ({len(files)} files, {size / 2**20:.1f} MiB)"


def doctor_report(
    requested: str,
    search_dirs: list[Path],
    info: driver.DriverInfo,
    cupy: tuple[str, int | None],
) -> list[str]:
    """The report's lines (the command gathers its inputs; tests give stand-ins)."""
    from cuzk import environment
    from cuzk.backends.cuda.loader import kernel_cache_dir

    lines = []
    if info.present:
        lines.append(f"driver:          {info.driver_version or 'unknown'} (nvidia-smi)")
        lines.append(f"CUDA (driver):   {info.cuda}; CuPy extra for it: {info.extra or 'none'}")
    else:
        lines.append("driver:          none (nvidia-smi is not found or fails)")
        lines.append("CUDA (driver):   none")
    cupy_text, cupy_gpus = cupy
    lines.append(f"CuPy:            {cupy_text}")
    if info.gpus:
        lines.append("GPUs:")
        lines += [
            f"  [{g.index}] {g.name}: {g.free_mib:,} MiB free of {g.total_mib:,} MiB"
            for g in info.gpus
        ]
    else:
        lines.append("GPUs:            none")
    lines.append(f"kernel cache:    {_folder_line(kernel_cache_dir())}")
    prebuilt = environment.kernel_prebuilt()
    if prebuilt is not None:
        lines.append(f"kernel prebuilt: {_folder_line(prebuilt, '*.cubin')}")
    lines.append("parameter cache: " + ", ".join(str(d) for d in search_dirs))
    for p in parameter_files():
        found = {
            ext: next((d / n for d in search_dirs if (d / n).is_file()), None)
            for ext, n in (("params", p.params_name), ("vk", p.vk_name))
        }
        state = " ".join(f".{ext} {'present' if f else 'missing'}" for ext, f in found.items())
        lines.append(f"  {p.circuit_id:<13} {state}")
    choice = choose_backend(requested, cupy_gpus, info)
    lines.append(
        f'backend:         {choice.name} ([gpus] backend = "{requested}"): {choice.reason}'
    )
    if choice.warning:
        lines.append(f"WARNING:         {choice.warning}")
    if choice.error:
        lines.append(f"ERROR:           the daemon would not start: {choice.error}")
    return lines


def run_doctor(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
    except CuzkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    dirs = list(dict.fromkeys(cfg.srs.search_dirs()))
    lines = doctor_report(cfg.gpus.backend, dirs, driver.probe(), _cupy_line())
    print("\n".join(lines))
    return 1 if any(line.startswith("ERROR:") for line in lines) else 0


def run_kernels(args: argparse.Namespace) -> int:
    from cuzk.backends.cuda import kernels, loader

    modules = kernels.PREBUILD_DEFAULT
    if args.nvcc is not None:
        arch = args.arch or "90"
        print(f"building {len(modules)} kernel modules for sm_{arch} with nvcc into {args.nvcc}")
        try:
            kernels.prebuild(args.nvcc, modules, arch, jobs=args.jobs, progress=_nvcc_progress)
        except (OSError, subprocess.CalledProcessError) as e:  # nvcc missing, or a build failed
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"done: set CUZK_KERNEL_PREBUILT={args.nvcc} where the daemon runs")
        return 0
    choice = choose_backend("cuda")
    if choice.error:
        print(f"error: {choice.error}; or build cubins without a GPU: --nvcc DIR", file=sys.stderr)
        return 2
    print(
        f"compiling {len(modules)} kernel modules with NVRTC on GPU 0 "
        f"(cache {loader.kernel_cache_dir()}; a module already cached loads in a moment)"
    )
    from cuzk.backends.cuda.memory import DeviceContext

    ctx = DeviceContext(0)
    t0 = time.perf_counter()
    for i, (name, extra) in enumerate(modules, 1):
        t = time.perf_counter()
        ctx.module(name, extra)
        took = time.perf_counter() - t
        print(f"[{i}/{len(modules)}] {loader.describe(name, extra)}: {took:.1f} s", flush=True)
    print(f"done in {time.perf_counter() - t0:.1f} s: the daemon loads them from the cache")
    return 0


def _nvcc_progress(done, total, item, path, seconds) -> None:
    from cuzk.backends.cuda.loader import describe

    what = "already built" if seconds is None else f"built in {seconds:.1f} s"
    print(f"[{done}/{total}] {describe(*item)}: {what} ({path.name})", flush=True)
