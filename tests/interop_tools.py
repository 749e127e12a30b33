"""The other side of the interop tests: pinned snarkjs and circom2 from npm.

``make test`` installs them with ``npm ci`` from the repository's
package-lock.json; :func:`node_tools` does the same when pytest runs alone.
Circuits from tests/data/circom are compiled with ``--prime bls12381`` and set
up with the committed 2^10 BLS12-381 powers of tau. Every artefact is cached
under the system temp folder in a directory named by the hash of everything
that produced it (sources, inputs, lock file, ptau), so reruns are instant
and a change anywhere rebuilds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
CIRCOM = DATA / "circom"
PTAU_BLS = DATA / "ptau" / "bls12381_pot10.ptau"
NODE_BIN = REPO / "node_modules" / ".bin"
CACHE = Path(tempfile.gettempdir()) / "cuzk-interop-tests"


class ToolError(RuntimeError):
    pass


@functools.cache
def node_tools() -> Path:
    """node_modules/.bin with snarkjs and circom2, installed from the lock file if needed."""
    marker = REPO / "node_modules" / ".package-lock.json"
    lock = REPO / "package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime:
        if shutil.which("npm") is None:
            raise ToolError("npm is needed for the interop tests (node 20: see README)")
        run(["npm", "ci", "--no-audit", "--no-fund"], timeout=600)
    for tool in ("snarkjs", "circom2"):
        if not (NODE_BIN / tool).exists():
            raise ToolError(f"{tool} missing from node_modules after npm ci")
    return NODE_BIN


def run(cmd: list[str], cwd: Path = REPO, timeout: int = 300, check: bool = True):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        command = " ".join(map(str, cmd))
        raise ToolError(f"{command} exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def snarkjs(*args: str | Path, check: bool = True):
    return run([str(node_tools() / "snarkjs"), *map(str, args)], check=check)


def snarkjs_verifies(vkey: Path, public: Path, proof: Path) -> bool:
    """``snarkjs groth16 verify``: True on OK, False on a rejected proof."""
    p = snarkjs("groth16", "verify", vkey, public, proof, check=False)
    out = p.stdout + p.stderr
    if p.returncode == 0 and "OK" in out:
        return True
    if "Invalid proof" in out or "not valid" in out:
        return False
    raise ToolError(f"snarkjs groth16 verify failed to run:\n{out[-2000:]}")


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:24]


def _cached(key: str, build) -> Path:
    """A directory built once per key (built in a scratch dir, then renamed in)."""
    final = CACHE / key
    if (final / ".done").exists():
        return final
    CACHE.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=CACHE))
    build(scratch)
    (scratch / ".done").write_text("ok")
    try:
        os.replace(scratch, final)
    except OSError:  # another run finished first: use its copy
        shutil.rmtree(scratch, ignore_errors=True)
    return final


def bn128_ptau() -> Path:
    """A small bn128 powers of tau (2^4), for the wrong-curve tests."""
    lock = (REPO / "package-lock.json").read_bytes()

    def build(d: Path) -> None:
        snarkjs("powersoftau", "new", "bn128", "4", d / "p0.ptau")
        snarkjs("powersoftau", "contribute", d / "p0.ptau", d / "p1.ptau", "--name=t", "-e=t")
        snarkjs("powersoftau", "prepare", "phase2", d / "p1.ptau", d / "pot.ptau")

    return _cached(f"ptau-bn128-{_digest(lock)}", build) / "pot.ptau"


@dataclass(frozen=True)
class Circuit:
    """A compiled circom circuit with its snarkjs key, witness and a snarkjs proof."""

    name: str
    dir: Path

    @property
    def r1cs(self) -> Path:
        return self.dir / f"{self.name}.r1cs"

    @property
    def wtns(self) -> Path:
        return self.dir / f"{self.name}.wtns"

    @property
    def zkey(self) -> Path:
        return self.dir / f"{self.name}.zkey"

    @property
    def vkey(self) -> Path:
        return self.dir / "verification_key.json"

    @property
    def proof(self) -> Path:
        return self.dir / "proof.json"

    @property
    def public(self) -> Path:
        return self.dir / "public.json"

    def public_values(self) -> list[int]:
        return [int(x) for x in json.loads(self.public.read_text())]


def circuit(name: str, prime: str = "bls12381") -> Circuit:
    """Compile, witness, set up (one phase-2 contribution) and prove with snarkjs."""
    source = CIRCOM / f"{name}.circom"
    inputs = CIRCOM / f"{name}.input.json"
    ptau = PTAU_BLS if prime == "bls12381" else bn128_ptau()
    key = _digest(
        source.read_bytes(),
        inputs.read_bytes(),
        (REPO / "package-lock.json").read_bytes(),
        ptau.read_bytes(),
        prime.encode(),
    )

    def build(d: Path) -> None:
        # circom2 runs under WASI and sees the working directory: compile from the
        # repository root with relative paths so circomlib resolves from node_modules.
        out = os.path.relpath(d, REPO)
        run(
            [
                str(node_tools() / "circom2"),
                os.path.relpath(source, REPO),
                "--r1cs",
                "--wasm",
                "--prime",
                prime,
                "-l",
                "node_modules",
                "-o",
                out,
            ]
        )
        snarkjs("wtns", "calculate", d / f"{name}_js" / f"{name}.wasm", inputs, d / f"{name}.wtns")
        snarkjs("groth16", "setup", d / f"{name}.r1cs", ptau, d / "k0.zkey")
        # One contribution makes δ ≠ 1, so the H and L points are really divided by δ.
        snarkjs(
            "zkey", "contribute", d / "k0.zkey", d / f"{name}.zkey", "--name=cuzk", "-e=cuzk tests"
        )
        snarkjs(
            "zkey", "export", "verificationkey", d / f"{name}.zkey", d / "verification_key.json"
        )
        snarkjs(
            "groth16",
            "prove",
            d / f"{name}.zkey",
            d / f"{name}.wtns",
            d / "proof.json",
            d / "public.json",
        )

    return Circuit(name, _cached(f"{name}-{prime}-{key}", build))
