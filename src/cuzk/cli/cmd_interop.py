"""``cuzk prove`` / ``cuzk verify`` / ``cuzk params-check`` / ``cuzk setup`` / ``cuzk export-vkey``:
Groth16 with snarkjs and bellperson files.

Exit codes of every command here: 0 done (for ``verify``: the proof
verified), 1 a proof that does not verify, 2 bad input (the reason is printed
on stderr, naming the file and what is wrong with it).

- ``cuzk prove --zkey K --wtns W --proof proof.json --public public.json``
  proves with a snarkjs key (H basis as snarkjs defines it);
  ``cuzk prove --params P --r1cs R --wtns W --proof proof.bin`` with a
  bellperson key for a circom circuit. Either way the proof is written as
  snarkjs JSON when its file name ends in ``.json``, else as bellperson's
  192-byte binary proof.
- ``cuzk verify (--vkey verification_key.json | --vk K.vk | --params P)
  --proof FILE --public public.json``: the proof may be snarkjs JSON or
  bellperson binary (several partitions: public.json is then a list of lists).
- ``cuzk verify --params P --check`` (or ``cuzk params-check P``): validate
  every point of a .params file, with a progress bar; reports the first bad
  point by section and index.
- ``cuzk setup --r1cs R (--params OUT | --zkey OUT)``: a development
  (single-party, insecure) setup for a circom circuit, written as bellperson
  parameters or a snarkjs .zkey (plus, on request, .vk and key JSON).
- ``cuzk export-vkey (--zkey | --params | --vk) --vkey OUT.json``: a snarkjs
  verification key, so ``snarkjs groth16 verify`` can check cuzk's proofs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from cuzk.algebra.arrays import fr_from_array
from cuzk.backends import get_backend
from cuzk.errors import CuzkError, EncodingError, InputError, VerificationError
from cuzk.formats import bellperson, snarkjs, snarkjs_json
from cuzk.groth16 import prover, setup, verifier
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import StageTimes

EXIT_OK = 0
EXIT_NOT_VERIFIED = 1
EXIT_BAD_INPUT = 2


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="prove with a snarkjs .zkey or a bellperson .params")
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--zkey", help="snarkjs Groth16 proving key (.zkey)")
    key.add_argument("--params", help="bellperson parameters (.params); needs --r1cs")
    p.add_argument("--r1cs", help="circom constraint system (.r1cs), with --params")
    p.add_argument("--wtns", required=True, help="witness (.wtns)")
    p.add_argument(
        "--proof", required=True, help="output: snarkjs JSON if it ends in .json, else binary"
    )
    p.add_argument("--public", help="output: public signals as JSON")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--times", action="store_true", help="print per-stage seconds on stderr")
    p.set_defaults(func=_guard(run_prove))

    v = sub.add_parser("verify", help="verify a Groth16 proof (snarkjs JSON or bellperson)")
    vk = v.add_mutually_exclusive_group(required=True)
    vk.add_argument("--vkey", help="snarkjs verification_key.json")
    vk.add_argument("--vk", help="bellperson verifying key (.vk)")
    vk.add_argument("--params", help="bellperson parameters (.params): its verifying key")
    v.add_argument("--proof", help="proof.json or a binary proof (192 bytes per partition)")
    v.add_argument("--public", help="public signals (JSON list, or list of lists per partition)")
    v.add_argument("--check", action="store_true", help="with --params: validate every point")
    v.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for --check")
    v.set_defaults(func=_guard(run_verify))

    c = sub.add_parser("params-check", help="validate every point of a bellperson .params file")
    c.add_argument("params", help="the .params file")
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes to use")
    c.set_defaults(func=_guard(run_params_check))

    s = sub.add_parser("setup", help="development Groth16 setup (INSECURE) for a circom .r1cs")
    s.add_argument("--r1cs", required=True, help="circom constraint system (.r1cs)")
    s.add_argument("--params", help="output: bellperson .params")
    s.add_argument("--zkey", help="output: snarkjs .zkey")
    s.add_argument("--vk", help="output: bellperson .vk")
    s.add_argument("--vkey", help="output: snarkjs verification_key.json")
    s.add_argument("--seed", type=int, help="seeded setup, reproducible (tests only)")
    s.set_defaults(func=_guard(run_setup))

    e = sub.add_parser("export-vkey", help="write a snarkjs verification_key.json")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--zkey", help="from a snarkjs .zkey")
    src.add_argument("--params", help="from a bellperson .params")
    src.add_argument("--vk", help="from a bellperson .vk")
    e.add_argument("--vkey", required=True, help="output file")
    e.set_defaults(func=_guard(run_export_vkey))


def _guard(fn):
    """Turn bad input into exit code 2 with a reason, never a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except VerificationError as e:
            print(f"NOT VERIFIED: {e}", file=sys.stderr)
            return EXIT_NOT_VERIFIED
        except (CuzkError, EncodingError) as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except OSError as e:
            print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
            return EXIT_BAD_INPUT

    return run


# --- prove -------------------------------------------------------------------


def run_prove(args: argparse.Namespace) -> int:
    backend = get_backend(args.backend)
    times = StageTimes()
    t = time.perf_counter()
    if args.zkey:
        if args.r1cs:
            raise InputError("--r1cs", "", "is only used with --params (a zkey holds its circuit)")
        from cuzk.formats import zkey_prover

        zkey = snarkjs.read_zkey(args.zkey)
        witness = snarkjs.read_wtns(args.wtns, zkey.n_vars, zkey.path)
        t = times.mark("read", t)
        key = zkey_prover.prepare_zkey(zkey, backend)
        t = times.mark("load key", t)
        proof = zkey_prover.prove_zkey(key, witness, times=times, source=args.wtns)
        public = zkey_prover.public_signals(zkey, witness)
    else:
        if not args.r1cs:
            raise InputError("--params", "", "needs --r1cs: the circuit the parameters are for")
        circuit = snarkjs.read_r1cs(args.r1cs)
        witness = snarkjs.read_wtns(args.wtns, circuit.n_vars, circuit.path)
        params = bellperson.MappedParams(args.params)
        t = times.mark("read", t)
        r1cs = circuit.r1cs
        bad_row = r1cs.first_unsatisfied(fr_from_array(witness))
        if bad_row is not None:
            raise InputError(
                args.wtns, f"constraint {bad_row}", f"not satisfied in the circuit of {args.r1cs}"
            )
        try:  # counts are checked first; a bad point is named by its file offset
            key = prover.load(params, r1cs, backend)
        except InputError as e:
            if e.source == params.path and "key and circuit differ" in e.problem:
                raise InputError(args.params, e.field, f"{e.problem} ({args.r1cs})") from e
            raise
        t = times.mark("load key", t)
        proof = prover.prove(key, r1cs, witness, times=times)
        public = fr_from_array(witness[1 : r1cs.num_inputs])
        t = time.perf_counter()
        if not verifier.verify(params.vk, public, proof):
            raise VerificationError(
                f"the proof did not verify against {args.params}: the parameters do not belong "
                f"to {args.r1cs} or are corrupted (run cuzk params-check)"
            )
        times.mark("verify", t)
    _write_proof(args.proof, proof)
    if args.public:
        snarkjs_json.write_public_json(args.public, public)
    if args.times:
        total = sum(times.seconds.values())
        for stage, sec in times.seconds.items():
            print(f"{stage:<14}{sec:9.3f} s", file=sys.stderr)
        print(f"{'total':<14}{total:9.3f} s", file=sys.stderr)
    print(f"proof written to {args.proof} (verified)")
    return EXIT_OK


def _write_proof(path: str, proof: Proof) -> None:
    """snarkjs JSON for a ``.json`` name, else bellperson's 192-byte binary proof."""
    if path.endswith(".json"):
        snarkjs_json.write_proof_json(path, proof)
    else:
        bellperson.write_proofs(path, [proof])


# --- verify ------------------------------------------------------------------


def _load_vk(args: argparse.Namespace) -> tuple[VerifyingKey, str]:
    if args.vkey:
        return snarkjs_json.read_vk_json(args.vkey), args.vkey
    if args.vk:
        return bellperson.read_vk(args.vk), args.vk
    return bellperson.MappedParams(args.params).vk, args.params


def _load_proofs(path: str) -> list[Proof]:
    data = Path(path).read_bytes()
    if data.lstrip()[:1] == b"{":
        return [snarkjs_json.read_proof_json(path)]
    return bellperson.proofs_from_bytes(data, path)


def _load_public(path: str, partitions: int) -> list[list[int]]:
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise InputError(path, f"line {e.lineno}", f"not JSON: {e.msg}") from e
    if isinstance(doc, list) and doc and all(isinstance(x, list) for x in doc):
        lists = [snarkjs_json.public_from_json(x, f"{path}[{i}]") for i, x in enumerate(doc)]
    else:
        lists = [snarkjs_json.public_from_json(doc, path)]
    if len(lists) != partitions:
        raise InputError(
            path, "", f"{len(lists)} lists of public inputs for {partitions} partition proofs"
        )
    return lists


def run_verify(args: argparse.Namespace) -> int:
    if args.check:
        if not args.params:
            raise InputError("--check", "", "validates a .params file: give --params")
        code = _check_params(args.params, args.jobs)
        if code != EXIT_OK or not args.proof:
            return code
    if not args.proof or not args.public:
        raise InputError("verify", "", "needs --proof and --public (or --params with --check)")
    vk, vk_name = _load_vk(args)
    proofs = _load_proofs(args.proof)
    inputs = _load_public(args.public, len(proofs))
    for i, x in enumerate(inputs):
        if len(x) != vk.num_inputs:
            raise InputError(
                args.public,
                f"partition {i}" if len(inputs) > 1 else "",
                f"{len(x)} public signals, {vk_name} expects {vk.num_inputs}",
            )
    ok = [verifier.verify(vk, x, p) for x, p in zip(inputs, proofs, strict=True)]
    if all(ok):
        print(f"OK: {len(proofs)} proof(s) verified")
        return EXIT_OK
    bad = [i for i, v in enumerate(ok) if not v]
    print(f"NOT VERIFIED: partition(s) {bad} of {args.proof}", file=sys.stderr)
    return EXIT_NOT_VERIFIED


# --- params check ------------------------------------------------------------


class _ProgressBar:
    """One line on stderr, redrawn in place on a terminal, else every 10 %."""

    WIDTH = 30

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last: tuple[str, int] = ("", -1)

    def __call__(self, section: str, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        tenth = int(frac * 10)
        if not self.tty and (section, tenth) == self.last:
            return
        self.last = (section, tenth)
        fill = int(frac * self.WIDTH)
        bar = "#" * fill + "." * (self.WIDTH - fill)
        line = f"{section:<5} [{bar}] {done}/{total} ({100 * frac:5.1f}%)"
        if self.tty:
            end = "\n" if done == total else ""
            print(f"\r{line}", end=end, file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr)


def _check_params(path: str, jobs: int) -> int:
    params = bellperson.MappedParams(path)
    counts = ", ".join(f"{n} {s.count}" for n, s in params.sections.items())
    print(f"{path}: verifying key valid; checking {counts}", file=sys.stderr)
    problem = params.check(progress=_ProgressBar(), jobs=max(1, jobs))
    if problem is not None:
        raise InputError(path, f"{problem.section}[{problem.index}]", problem.problem)
    print(f"OK: every point of {path} is valid")
    return EXIT_OK


def run_params_check(args: argparse.Namespace) -> int:
    return _check_params(args.params, args.jobs)


# --- setup / export ------------------------------------------------------------


def run_setup(args: argparse.Namespace) -> int:
    if bool(args.params) == bool(args.zkey):
        raise InputError("setup", "", "give one output key: --params (bellperson) or --zkey")
    circuit = snarkjs.read_r1cs(args.r1cs)
    if args.zkey:
        from cuzk.formats import zkey_setup

        zkey_setup.write_zkey(args.zkey, circuit, seed=args.seed)
        vk = snarkjs.read_zkey(args.zkey).vk
        out = args.zkey
    else:
        pk = setup.setup(circuit.r1cs, seed=args.seed)
        bellperson.write_params(args.params, pk)
        vk, out = pk.vk, args.params
    if args.vk:
        bellperson.write_vk(args.vk, vk)
    if args.vkey:
        snarkjs_json.write_vk_json(args.vkey, vk)
    r1 = circuit.r1cs
    print(
        f"{out}: {r1.num_constraints} constraints ({circuit.n_constraints} + "
        f"{circuit.n_public + 1} input constraints), domain "
        f"{1 << max(0, (r1.num_constraints - 1).bit_length())}; development key, INSECURE"
    )
    return EXIT_OK


def run_export_vkey(args: argparse.Namespace) -> int:
    if args.zkey:
        vk = snarkjs.read_zkey(args.zkey).vk
    elif args.params:
        vk = bellperson.MappedParams(args.params).vk
    else:
        vk = bellperson.read_vk(args.vk)
    snarkjs_json.write_vk_json(args.vkey, vk)
    print(f"verification key written to {args.vkey}")
    return EXIT_OK
