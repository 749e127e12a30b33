"""DESIGN.md's layers: every import of a cuzk module points down (or sideways
within its own layer). An import that points up a layer is a bug."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "cuzk"

# "may import" of DESIGN.md's table; what those may import is allowed too.
MAY_IMPORT = {
    "cli": {"bench", "service", "engine", "formats"},
    "bench": {"service", "engine", "formats"},
    "service": {"engine"},
    "engine": {"groth16", "circuits", "formats", "backends"},
    "circuits": {"synthesis", "gadgets", "hashers", "r1cs", "algebra"},
    "synthesis": {"gadgets", "hashers", "r1cs", "algebra"},
    "gadgets": {"hashers", "r1cs", "algebra"},
    "hashers": {"algebra"},
    "groth16": {"r1cs", "backends", "algebra"},
    "formats": {"groth16", "r1cs", "backends", "algebra"},
    "backends": {"algebra"},
    "r1cs": {"algebra"},
    "algebra": set(),
}
# Edges with no layer of their own: errors and the environment's variables
# (every layer), the package root.
EVERYWHERE = {"errors", "environment", "__init__"}


def allowed(layer: str) -> set[str]:
    out, todo = set(), [layer]
    while todo:
        for below in MAY_IMPORT[todo.pop()]:
            if below not in out:
                out.add(below)
                todo.append(below)
    return out | {layer} | EVERYWHERE


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "cuzk" and node.level == 0:
            names = [f"cuzk.{a.name}" for a in node.names]  # from cuzk import environment
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == "cuzk" or n.startswith("cuzk.")]
    return found


def test_every_layer_is_in_the_table() -> None:
    layers = {p.stem if p.is_file() else p.name for p in SRC.iterdir() if p.name != "__pycache__"}
    layers = {x for x in layers if not x.startswith("_") and x != "py"} - EVERYWHERE
    assert layers <= set(MAY_IMPORT), layers - set(MAY_IMPORT)


def test_the_library_imports_no_benchmark() -> None:
    """Benchmarks are a layer of their own: below cli/, above everything else."""
    assert {x for x in MAY_IMPORT if "bench" in allowed(x)} == {"cli", "bench"}
    library = [p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] not in ("cli", "bench")]
    assert library and not [p for p in library if "bench" in p.stem or "profile" in p.stem]


def test_imports_point_down() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        layer = path.relative_to(SRC).parts[0].removesuffix(".py")
        if layer not in MAY_IMPORT:
            continue
        ok = allowed(layer)
        for line, name in imports(path):
            target = name.split(".")[1] if "." in name else "__init__"
            if target not in ok:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {name} ({layer} → {target})")
    assert not bad, "\n".join(bad)


# The library's layers above backends/ reach a backend only through the package's
# face (cuzk.backends: get_backend, open_gpu, gpus, memory_model, choose_backend)
# and its contract (cuzk.backends.base.Backend); benchmarks of one backend's
# kernels and the CLI's doctor and kernels commands may name it.
BACKEND_FACE = {"cuzk.backends", "cuzk.backends.base"}
NAMES_A_BACKEND = {"bench", "cli"}


def test_nothing_above_the_backends_names_one() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        layer = path.relative_to(SRC).parts[0].removesuffix(".py")
        if layer in NAMES_A_BACKEND or layer == "backends" or layer not in MAY_IMPORT:
            continue
        for line, name in imports(path):
            if name.startswith("cuzk.backends") and name not in BACKEND_FACE:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_no_backend_method_is_looked_up_by_name() -> None:
    """Everything the engine and the prover ask of a backend is in the protocol."""
    bad = []
    for layer in ("engine", "groth16", "service", "formats"):
        for path in sorted((SRC / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr")
                    and len(node.args) >= 2
                    and (
                        ast.unparse(node.args[0]) == "be"
                        or ast.unparse(node.args[0]).endswith("backend")
                    )
                ):
                    bad.append(f"{path.relative_to(SRC)}:{node.lineno} {ast.unparse(node)}")
    assert not bad, "\n".join(bad)
