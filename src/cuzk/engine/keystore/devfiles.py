"""Development parameters as files, and the log of a key on its way in.

A development key (INSECURE: a single-party setup whose toxic waste this
process drew) is written exactly as Filecoin's parameters are: a bellperson
``.params`` file and its ``.vk``, under the names the circuit's real files
have (:class:`cuzk.engine.kinds.base.KeyFiles`). ``cuzk gen-params`` and the
key store's first use of a circuit without parameters both come here, and
the engine then loads the file like any other, so development and production
keys take one path into the prover.

The points are made a chunk at a time (on the first GPU when there is one,
:class:`cuzk.groth16.setup_gpu.GpuPoints`) and streamed to disk: the host
holds the query scalars (32 bytes a point), never the points.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from cuzk.engine.keystore.progress import ProgressLog
from cuzk.engine.kinds.base import KeyFiles, domain_size
from cuzk.formats.bellperson import write_params_from
from cuzk.groth16.keys import QUERIES, point_bytes
from cuzk.groth16.setup import DevParams, PointMaker
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)

_VK_FIXED_BYTES = 3 * 96 + 3 * 192 + 4  # α₁ β₁ δ₁, β₂ γ₂ δ₂, the IC count


def params_file_bytes(counts: dict[str, int]) -> int:
    """Size of a .params file from its counts (queries and "ic", as KeyLayout has them)."""
    return (
        _VK_FIXED_BYTES
        + 96 * counts["ic"]
        + 4 * len(QUERIES)
        + sum(counts[q] * point_bytes(q) for q in QUERIES)
    )


def dev_setup_host_bytes(num_constraints: int) -> int:
    """Host bytes a development key's generation holds: the query scalars at their
    peak (native kernels: 134 bytes a constraint for a 2^24-constraint circuit,
    BENCHMARKS.md "Setup query scalars"; 160 a domain point here) and one chunk
    of points on its way to the file or the device (at most 2^20 points, held
    as limbs, as their encoding and in the reader's buffer: 3 × 192 bytes)."""
    m = domain_size(num_constraints)
    return 160 * m + 3 * 192 * min(m, 1 << 20)


def gpu_points(device: Any) -> PointMaker:
    """The point maker of a GPU device (its budget and kernels)."""
    from cuzk.groth16.setup_gpu import GpuPoints

    return GpuPoints(device.backend.point_maker())


def disk_free(directory: Path) -> int:
    """Bytes free on the file system of ``directory`` (or of its nearest existing parent)."""
    d = Path(directory)
    while not d.exists() and d != d.parent:
        d = d.parent
    return shutil.disk_usage(d).free


def write_dev_params(
    r1cs: R1CS,
    files: KeyFiles,
    directory: str | os.PathLike,
    seed: int | None = None,
    points: PointMaker | None = None,
) -> Path:
    """Generate an INSECURE development key for ``r1cs`` and write it as
    ``directory/files.params`` and ``files.vk``; returns the .params path.

    ``points`` makes the points (the CPU's tables by default); ``seed`` makes
    the key reproducible (tests), else the toxic waste is drawn from the OS's
    secure RNG and forgotten.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    log.warning(
        "generating an INSECURE development key for %s (%d constraints) as %s",
        files.circuit_id,
        r1cs.num_constraints,
        directory / files.params,
    )
    source = DevParams(r1cs, seed=seed, points=points, name=f"development key {files.circuit_id}")
    counts = {q: source.count(q) for q in QUERIES} | {"ic": len(source.vk.ic)}
    total = params_file_bytes(counts)
    need = total + (64 << 20)
    free = disk_free(directory)
    if free < need:
        raise OSError(
            f"{directory}: {free / 2**30:.1f} GiB free, the parameters of {files.circuit_id} "
            f"need {need / 2**30:.1f} GiB"
        )
    step = ProgressLog(f"writing {files.params}")
    sizes = {q: counts[q] * point_bytes(q) for q in QUERIES}
    before = {q: sum(sizes[p] for p in QUERIES[: QUERIES.index(q)]) for q in QUERIES}

    def progress(section: str, done: int, n: int) -> None:
        step(before[section] + done * point_bytes(section), sum(sizes.values()))

    path = directory / files.params
    write_params_from(path, source, directory / files.vk, progress)
    log.info(
        "development key of %s written in %.1f s (%.2f GB)",
        files.circuit_id,
        time.perf_counter() - t,
        path.stat().st_size / 1e9,
    )
    return path
