"""Every kernel module the code loads, built with nvcc and dumped as SASS, one
file per (module, kernel), for comparing two trees' machine code without a GPU.

    PYTHONPATH=src python scripts/kernel_sass.py OUT [--arch 90]
    diff -r OLD/sass NEW/sass            # or: python scripts/kernel_sass.py --compare OLD NEW

Addresses and encodings are stripped, so identical files mean identical
instructions. Needs nvcc, cuobjdump and nvdisasm (CUDA's, or PyPI's
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm; NVDISASM_PATH names nvdisasm's
folder). The builds are the prebuild's (``python -m cuzk.backends.cuda.kernels``);
a module is named by its file and its group (``msm.cu-G2``), not by its flags,
so trees whose tuning moved between the source and the flags still pair up
(a tree that also prebuilt comparison builds: its first, default, build).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path


def _label(name: str, extra: tuple[str, ...]) -> str:
    return name + ("-G2" if any(e.startswith("-DCUZK_G2") for e in extra) else "")


def dump(out: Path, arch: str, cuobjdump: str) -> None:
    from cuzk.backends.cuda.kernels import PREBUILD_DEFAULT, prebuild

    paths = prebuild(out / "cubin", PREBUILD_DEFAULT, arch)
    seen = set()
    for (name, extra), path in zip(PREBUILD_DEFAULT, paths, strict=True):
        if _label(name, extra) in seen:  # an older tree's variant builds: the default came first
            continue
        seen.add(_label(name, extra))
        sass = subprocess.run(
            [cuobjdump, "-sass", str(path)], capture_output=True, text=True, check=True
        ).stdout
        folder = out / "sass" / _label(name, extra)
        folder.mkdir(parents=True, exist_ok=True)
        fn, body = None, []
        for line in [*sass.splitlines(), "Function : <end>"]:
            m = re.match(r"\s*Function : (\S+)", line)
            if m:
                if fn:
                    (folder / f"{fn[:200]}.sass").write_text("".join(body))
                fn, body = m.group(1), []
                continue
            line = re.sub(r"/\*[0-9a-f]{4,}\*/|/\* 0x[0-9a-f]+ \*/", "", line).strip()
            if fn and line and not line.startswith("."):
                body.append(re.sub(r" +", " ", line) + "\n")


def compare(old: Path, new: Path) -> int:
    same = total = 0
    for a in sorted((old / "sass").rglob("*.sass")):
        b = new / "sass" / a.relative_to(old / "sass")
        total += 1
        if not b.exists():
            print(f"{a.relative_to(old)}: only in {old}")
            continue
        x, y = a.read_text().splitlines(), b.read_text().splitlines()
        if x == y:
            same += 1
        else:
            print(f"{a.relative_to(old / 'sass')}: differs ({len(x)} and {len(y)} instructions)")
    print(f"{same}/{total} kernels identical")
    return 0 if same == total else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("--arch", default="90")
    p.add_argument("--cuobjdump", default="cuobjdump")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = p.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        p.error("OUT or --compare OLD NEW")
    dump(args.out, args.arch, args.cuobjdump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
