"""Regenerate proving_pb2.py and proving_pb2_grpc.py from proving.proto.

Run from anywhere: ``python scripts/regenerate_proto.py`` (needs the pinned
grpcio-tools of the ``test`` extra). ``--check`` compares instead of
writing, and fails when the committed modules are stale.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"  # the import path of cuzk.service.proto
HERE = SRC / "cuzk" / "service" / "proto"
OUTPUTS = ("proving_pb2.py", "proving_pb2_grpc.py")


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc

    proto = HERE.relative_to(SRC) / "proving.proto"
    # Generated beneath its package path so the gRPC module imports
    # ``cuzk.service.proto.proving_pb2``.
    args = [
        "protoc",
        f"-I{SRC}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(proto),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the modules are stale")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        generated = Path(tmp) / HERE.relative_to(SRC)
        stale = []
        for name in OUTPUTS:
            new = (generated / name).read_text()
            path = HERE / name
            if args.check:
                if not path.exists() or path.read_text() != new:
                    stale.append(name)
            else:
                path.write_text(new)
    if stale:
        names = ", ".join(stale)
        print(f"stale generated modules: {names}; run scripts/regenerate_proto.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
