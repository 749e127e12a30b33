"""cuzk's prover vs ``snarkjs groth16 prove`` on the same .zkey + .wtns, side by side.

Usage (in a source tree, after ``make test`` has installed the tools):

    .venv/bin/python -m cuzk.bench.snarkjs [--runs 3] [--power 16] [--work .cache/bench]

Builds once and caches under --work: circomlib's SHA-256 of 512 bits
(tests/data/circom/sha256_2blocks.circom, ~62.5k constraints, 2^16 domain),
its witness, a Groth16 .zkey and its verification key (exported by snarkjs).
The key comes from ``cuzk setup --zkey`` (--key cuzk, the default: seconds) or
from snarkjs itself (--key snarkjs: a BLS12-381 powers of tau of 2^power with
one phase-2 contribution, which snarkjs needs hours to prepare on 2 cores).
Both provers do the same work on either key.

Then alternates the two provers ``--runs`` times each, as separate processes
timed from start to exit (startup and key reading included on both sides),
checks every proof with ``snarkjs groth16 verify``, and prints the per-stage
medians and the ratio cuzk ÷ snarkjs.

snarkjs's stages are read from the timestamps of its ``-v`` log lines; cuzk's
from ``cuzk prove --times``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cuzk.bench.timing import cpu_seconds

REPO = Path(__file__).resolve().parents[3]  # the source tree: src/cuzk/bench/ is 3 down
BIN = REPO / "node_modules" / ".bin"
CIRCUIT = REPO / "tests" / "data" / "circom" / "sha256_2blocks.circom"
INPUT = REPO / "tests" / "data" / "circom" / "sha256_2blocks.input.json"


def sh(*cmd, cwd: Path = REPO) -> None:
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    subprocess.run(list(map(str, cmd)), cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def build(work: Path, power: int, key: str) -> dict[str, Path]:
    work.mkdir(parents=True, exist_ok=True)
    snarkjs = BIN / "snarkjs"
    name = CIRCUIT.stem
    r1cs = work / f"{name}.r1cs"
    if not r1cs.exists():
        sh(BIN / "circom2", os.path.relpath(CIRCUIT, REPO), "--r1cs", "--wasm", "--prime",
           "bls12381", "-l", "node_modules", "-o", os.path.relpath(work, REPO))  # fmt: skip
    wtns = work / f"{name}.wtns"
    if not wtns.exists():
        sh(snarkjs, "wtns", "calculate", work / f"{name}_js" / f"{name}.wasm", INPUT, wtns)
    zkey = work / f"{name}.{key}.zkey"
    if not zkey.exists() and key == "cuzk":
        sh(REPO / ".venv" / "bin" / "cuzk", "setup", "--r1cs", r1cs, "--zkey", zkey)
    if not zkey.exists():
        ptau = work / f"pot{power}.ptau"
        if not ptau.exists():
            sh(snarkjs, "powersoftau", "new", "bls12381", power, work / "pot_0.ptau")
            sh(snarkjs, "powersoftau", "contribute", work / "pot_0.ptau", work / "pot_1.ptau",
               "--name=bench", "-e=cuzk bench")  # fmt: skip
            sh(snarkjs, "powersoftau", "prepare", "phase2", work / "pot_1.ptau", ptau)
        sh(snarkjs, "groth16", "setup", r1cs, ptau, work / "k0.zkey")
        sh(snarkjs, "zkey", "contribute", work / "k0.zkey", zkey, "--name=bench", "-e=bench")
    vkey = work / f"verification_key.{key}.json"
    if not vkey.exists():
        sh(snarkjs, "zkey", "export", "verificationkey", zkey, vkey)
    return {"zkey": zkey, "wtns": wtns, "vkey": vkey}


# snarkjs -v log lines that open each stage (first occurrence).
SNARKJS_MARKS = [
    ("Building ABC", "spmv"),
    ("IFFT_A", "h (6 FFTs + join)"),
    ("Reading A Points", "msm A+B1 (G1)"),
    ("Reading B2 Points", "msm B2 (G2)"),
    ("Reading C Points", "msm C+H (G1)"),
]


def run_snarkjs(files, out: Path) -> tuple[float, dict[str, float]]:
    cmd = [str(BIN / "snarkjs"), "groth16", "prove", files["zkey"], files["wtns"],
           out / "proof.json", out / "public.json", "-v"]  # fmt: skip
    t0 = time.perf_counter()
    p = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: dict[str, float] = {}
    for line in p.stdout:
        now = time.perf_counter() - t0
        text = line.decode(errors="replace")
        for marker, stage in [*SNARKJS_MARKS, ("Multiexp end: multiexp H", "_end")]:
            if marker in text and stage not in seen:
                seen[stage] = now
    if p.wait() != 0:
        raise RuntimeError("snarkjs groth16 prove failed")
    total = time.perf_counter() - t0
    stages = {"start, read wtns/zkey header+coeffs": seen[SNARKJS_MARKS[0][1]]}
    order = [s for _, s in SNARKJS_MARKS]
    for a, b in zip(order, [*order[1:], None], strict=True):
        stages[a] = (seen[b] if b else seen["_end"]) - seen[a]
    # The H multiexp is the last stage whose end is logged; then snarkjs assembles,
    # writes and exits: what is left to the process exit.
    stages["assemble, write JSON, exit"] = total - seen["_end"]
    return total, stages


def run_cuzk(files, out: Path) -> tuple[float, dict[str, float]]:
    cmd = [str(REPO / ".venv" / "bin" / "cuzk"), "prove", "--zkey", files["zkey"], "--wtns",
           files["wtns"], "--proof", out / "proof.json", "--public", out / "public.json",
           "--backend", "cpu", "--times"]  # fmt: skip
    t0 = time.perf_counter()
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    total = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"cuzk prove failed: {p.stderr}")
    stages = {}
    for line in p.stderr.splitlines():
        parts = line.rsplit(maxsplit=2)  # "<stage name>  <seconds> s"
        if len(parts) == 3 and parts[2] == "s" and parts[0].strip() != "total":
            stages[parts[0].strip()] = float(parts[1])
    stages["python start + write"] = total - sum(stages.values())
    return total, stages


def verify(files, out: Path) -> None:
    p = subprocess.run(
        [str(BIN / "snarkjs"), "groth16", "verify", str(files["vkey"]), str(out / "public.json"),
         str(out / "proof.json")], capture_output=True, text=True,
    )  # fmt: skip
    if p.returncode != 0 or "OK" not in p.stdout:
        raise RuntimeError(f"snarkjs rejected the proof in {out}: {p.stdout}{p.stderr}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--power", type=int, default=16)
    ap.add_argument("--work", type=Path, default=REPO / ".cache" / "bench")
    ap.add_argument(
        "--key",
        choices=("cuzk", "snarkjs"),
        default="cuzk",
        help="who makes the .zkey: cuzk setup --zkey (seconds) or snarkjs from a 2^power "
        "powers of tau (hours on 2 cores: phase-2 preparation)",
    )
    args = ap.parse_args()
    files = build(args.work, args.power, args.key)
    results: dict[str, list] = {"snarkjs": [], "cuzk": []}
    for i in range(args.runs):
        for tool, fn in (("snarkjs", run_snarkjs), ("cuzk", run_cuzk)):
            out = args.work / f"run-{tool}-{i}"
            out.mkdir(exist_ok=True)
            before = cpu_seconds(children=True)
            total, stages = fn(files, out)
            cpu = cpu_seconds(children=True) - before
            verify(files, out)
            results[tool].append((total, stages, cpu))
            print(f"run {i} {tool:<8}{total:8.2f} s wall {cpu:8.2f} s CPU (verified by snarkjs)",
                  file=sys.stderr)  # fmt: skip
    print(f"\nkey: {files['zkey'].name} (made by {args.key})")
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{platform.python_implementation()} {platform.python_version()}; "
          f"date {time.strftime('%Y-%m-%d')}; runs {args.runs} each, medians")  # fmt: skip
    med = {t: statistics.median(x[0] for x in r) for t, r in results.items()}
    cpu = {t: statistics.median(x[2] for x in r) for t, r in results.items()}
    for tool, runs in results.items():
        print(f"\n{tool}: {med[tool]:.2f} s wall, {cpu[tool]:.2f} s CPU (user + sys)")
        for stage in runs[0][1]:
            print(f"  {stage:<38}{statistics.median(r[1][stage] for r in runs):8.2f} s")
    ratios = [c[0] / s[0] for c, s in zip(results["cuzk"], results["snarkjs"], strict=True)]
    print(f"\nratio cuzk / snarkjs = {med['cuzk'] / med['snarkjs']:.2f} (wall, medians); "
          f"per run {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"CPU time ratio {cpu['cuzk'] / cpu['snarkjs']:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
