"""``cuzk-bench`` against a running daemon: single, batch, stress, status, preload, metrics.

Flags and output follow Curio's cuzk-bench (``-a/--addr``, ``-t/--type
porep|snap|wpost|winning|demo``, ``--c1``, ``--vanilla``, ``-c/--count``,
``-j/--concurrency``; the "=== Batch Benchmark ===" report, made by
:mod:`cuzk.bench.load`). The connection options (``-a``, ``--token-file``,
``--tls-ca``) go before the subcommand, as in Curio (``cuzk-bench -a
127.0.0.1:9820 batch -t demo``), or after it. ``demo-service`` (the README's
main job) is :mod:`cuzk.cli.cmd_demo`'s.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

from cuzk.bench.load import STATUS, Probe, ProofTemplate, run_batch, run_stress
from cuzk.cli._progress import Ticker
from cuzk.engine.jobs import KIND_ALIASES, KIND_NAMES, Priority, ProofKind
from cuzk.engine.kinds import demo
from cuzk.errors import InputError
from cuzk.service.client import Client, default_address
from cuzk.service.proto import proving_pb2 as pb

# -t: a kind's name or an old spelling of it (cuzk.engine.jobs.KIND_ALIASES)
TYPES = {name: ProofKind.from_name(name) for name in (*KIND_NAMES, *KIND_ALIASES)}
TIERS = {0: "HOT", 1: "WARM", 2: "COLD"}
# Filecoin's proof type numbers (go-state-types abi), as the daemon reads them.
REGISTERED_PROOF_HELP = (
    "Filecoin's proof type number; 0 (default) with --sector-size: the size decides. "
    "Sizes in order 2KiB, 8MiB, 512MiB, 32GiB, 64GiB. "
    "winning (RegisteredPoStProof): 0-4; "
    "wpost: 5-9 (V1), 10-14 (V1_1); "
    "snap (RegisteredUpdateProof): 0-4; "
    "porep (RegisteredSealProof, checked against the C1's own): 0-4 V1, 5-9 V1_1, "
    "10-14 V1_1 SyntheticPoRep, 15-19 V1_2 NonInteractivePoRep"
)
GIB = 1 << 30


class UsageError(Exception):
    pass


# --- arguments ----------------------------------------------------------------------
def connection_options(p: argparse.ArgumentParser) -> None:
    """``-a/--addr``, ``--token-file``, ``--tls-ca``: before the subcommand (Curio's
    order) or after it. Unset, they are absent from the parsed args (SUPPRESS), so
    a value given before the subcommand is not overwritten by the subcommand's."""
    p.add_argument(
        "-a",
        "--addr",
        default=argparse.SUPPRESS,
        help=f"daemon address (default $CUZK_ADDR or {default_address()})",
    )
    p.add_argument(
        "--token-file",
        default=argparse.SUPPRESS,
        help="bearer token for a TCP daemon (or $CUZK_TOKEN)",
    )
    p.add_argument("--tls-ca", default=argparse.SUPPRESS, help="CA certificate of a TLS daemon")


def _proof_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-t",
        "--type",
        required=True,
        help=f"{', '.join(KIND_NAMES)} (old spellings such as winning-post accepted)",
    )
    p.add_argument("--c1", type=Path, help="c1.json (PoRep)")
    p.add_argument("--vanilla", type=Path, help="vanilla proofs: JSON array of base64, or raw")
    p.add_argument(
        "--registered-proof",
        type=int,
        default=0,
        metavar="N",
        help=REGISTERED_PROOF_HELP,
    )
    p.add_argument("--sector-size", default=None, help="bytes, or 2KiB … 64GiB (default: c1's)")
    p.add_argument("--sector-num", type=int, default=1)
    p.add_argument("--miner-id", type=int, default=1000)
    p.add_argument("--randomness", help="hex, 32 bytes (PoSt; default zeros)")
    p.add_argument("--comm-r-old", help="hex, 32 bytes (SnapDeals)")
    p.add_argument("--comm-r-new", help="hex, 32 bytes (SnapDeals)")
    p.add_argument("--comm-d-new", help="hex, 32 bytes (SnapDeals)")
    p.add_argument(
        "--priority", choices=[x.name.lower() for x in Priority][1:], help="default: the kind's"
    )
    p.add_argument("--constraints", type=int, default=2000, help="demo: circuit size")
    p.add_argument("--partitions", type=int, default=2, help="demo: partitions per proof")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("single", help="one proof through the daemon")
    connection_options(p)
    _proof_args(p)
    p.add_argument("--partition", type=int, default=0, help="WindowPoSt partition index")
    p.add_argument(
        "--out",
        type=Path,
        help="write the proof to this file: bellperson bytes (192 a partition), "
        "as `cuzk verify --proof` reads them",
    )
    p.add_argument("--out-hex", type=Path, help="write the proof to this file as hex text")
    p.set_defaults(func=cmd_single)

    p = sub.add_parser("batch", help="N proofs, with concurrency; throughput report")
    connection_options(p)
    _proof_args(p)
    p.add_argument("-c", "--count", type=int, default=3)
    p.add_argument("-j", "--concurrency", type=int, default=1)
    p.add_argument("--probe", help="beside the batch, proofs of this type (latency under load)")
    p.add_argument("--probe-every", default="5s", help="one probe per interval (e.g. 5s, 500ms)")
    p.add_argument("--probe-vanilla", type=Path, help="the probes' vanilla proofs (PoSt)")
    p.add_argument("--probe-constraints", type=int, help="demo probes: circuit size")
    p.add_argument(
        "--probe-priority",
        choices=[x.name.lower() for x in Priority][1:],
        help="default: its kind's",
    )
    p.add_argument("--baseline", action="store_true", help="with --probe: the batch alone first")
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser("stress", help="mixed proof kinds at given rates for a duration")
    connection_options(p)
    p.add_argument("--duration", default="60s", help="e.g. 90s, 10m, 1h")
    p.add_argument("-j", "--concurrency", type=int, default=8, help="most proofs in flight")
    p.add_argument("--demo-rate", help="e.g. 1/2s (demo proofs)")
    p.add_argument("--demo-priority", default="mixed", help="low|normal|high|critical|mixed")
    p.add_argument("--constraints", type=int, default=1000, help="demo: circuit size")
    p.add_argument("--partitions", type=int, default=2, help="demo: partitions per proof")
    p.add_argument("--porep-c1", type=Path)
    p.add_argument("--porep-rate")
    p.add_argument("--wpost-vanilla", type=Path)
    p.add_argument("--wpost-rate")
    p.add_argument("--winning-vanilla", type=Path)
    p.add_argument("--winning-rate")
    p.add_argument("--snap-vanilla", type=Path)
    p.add_argument("--snap-rate")
    p.add_argument("--seed", type=int, default=None, help="seed the arrival times")
    p.set_defaults(func=cmd_stress)

    p = sub.add_parser("status", help="the daemon's status")
    connection_options(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("preload", help="make a circuit's key hot")
    connection_options(p)
    p.add_argument("-c", "--circuit-id", required=True, help="e.g. porep-32g, demo-r995-w7")
    p.set_defaults(func=cmd_preload)

    p = sub.add_parser("evict", help="drop a circuit's key from the hot tier")
    connection_options(p)
    p.add_argument("-c", "--circuit-id", required=True)
    p.set_defaults(func=cmd_evict)

    p = sub.add_parser("metrics", help="the daemon's Prometheus metrics")
    connection_options(p)
    p.set_defaults(func=cmd_metrics)


def _client(args: argparse.Namespace) -> Client:
    return Client(
        getattr(args, "addr", None),
        token_file=getattr(args, "token_file", None),
        tls_ca_file=getattr(args, "tls_ca", None),
    )


def _hex32(value: str | None, name: str) -> bytes:
    if value is None:
        return b""
    try:
        b = bytes.fromhex(value.removeprefix("0x"))
    except ValueError as e:
        raise UsageError(f"--{name}: not hex ({e})") from e
    if len(b) != 32:
        raise UsageError(f"--{name}: {len(b)} bytes, expected 32")
    return b


def _size(value: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB|)", value.strip())
    if not m:
        raise UsageError(f"--sector-size: {value!r} (examples: 2KiB, 32GiB, 34359738368)")
    return int(m.group(1)) * {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]


def _read_flag_file(path: Path, flag: str) -> bytes:
    """A file a flag names; one that cannot be read is a UsageError naming the flag."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"{flag} {path}: {e.strerror or e}") from e


def _load_vanilla(path: Path, flag: str = "--vanilla") -> list[bytes]:
    data = _read_flag_file(path, flag)
    try:
        items = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return [data]
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        return [data]
    try:
        return [base64.b64decode(s, validate=True) for s in items]
    except ValueError as e:
        raise UsageError(f"{path}: an entry is not valid base64 ({e})") from e


def build_template(args: argparse.Namespace) -> ProofTemplate:
    try:
        kind = ProofKind.from_name(args.type)
    except InputError:
        raise UsageError(f"unknown proof type: {args.type}. Use: {', '.join(KIND_NAMES)}") from None
    m = pb.SubmitProofRequest(
        proof_kind=int(kind),
        registered_proof=args.registered_proof,
        sector_number=args.sector_num,
        miner_id=args.miner_id,
        partition_index=getattr(args, "partition", 0),
    )
    if args.priority:
        m.priority = int(Priority[args.priority.upper()])
    if args.sector_size:
        m.sector_size = _size(args.sector_size)
    tpl = ProofTemplate(kind, m)
    if kind == ProofKind.DEMO:
        tpl.demo_circuit = demo.circuit_for_constraints(args.constraints)
        tpl.demo_partitions = args.partitions
    elif kind == ProofKind.POREP_SEAL_COMMIT:
        if args.c1 is None:
            raise UsageError("--c1 required for PoRep proof type")
        m.vanilla_proof = _read_flag_file(args.c1, getattr(args, "c1_flag", "--c1"))
        if not m.sector_size:
            try:
                m.sector_size = int(json.loads(m.vanilla_proof)["SectorSize"])
            except (ValueError, KeyError, TypeError):
                m.sector_size = 32 * GIB  # the daemon explains what is wrong with the file
    else:
        if args.vanilla is None:
            raise UsageError("--vanilla required for PoSt/SnapDeals proof types")
        m.vanilla_proofs.extend(
            _load_vanilla(args.vanilla, getattr(args, "vanilla_flag", "--vanilla"))
        )
        if not m.sector_size and not m.registered_proof:
            m.sector_size = 32 * GIB  # as Curio's bench; a registered_proof decides by itself
        if kind in (ProofKind.WINNING_POST, ProofKind.WINDOW_POST_PARTITION):
            m.randomness = _hex32(args.randomness, "randomness") or bytes(32)
        else:
            m.comm_r_old = _hex32(args.comm_r_old, "comm-r-old")
            m.comm_r_new = _hex32(args.comm_r_new, "comm-r-new")
            m.comm_d_new = _hex32(args.comm_d_new, "comm-d-new")
    return tpl


# --- commands -----------------------------------------------------------------------
def _rpc_error(e: grpc.RpcError, addr: str | None = None, default: bool = False) -> int:
    """The error a command prints; a daemon that cannot be reached is said to be
    so, with the address tried and how to give another (a draining daemon's
    refusal, also UNAVAILABLE, says what it is itself)."""
    if (
        e.code() == grpc.StatusCode.UNAVAILABLE
        and addr is not None
        and "shutting down" not in (e.details() or "")
    ):
        print(
            f"error: UNAVAILABLE: no cuzk daemon answers at {addr}"
            f"{' (the default address)' if default else ''}. Start one, or pass its "
            "address: cuzk-bench -a unix:///path/to/cuzk.sock … or -a 127.0.0.1:9820 … "
            "(or set CUZK_ADDR)",
            file=sys.stderr,
        )
        return 1
    print(f"error: {e.code().name}: {e.details()}", file=sys.stderr)
    return 1


def guard(fn: Any) -> Any:
    def wrapper(args: argparse.Namespace) -> int:
        given = getattr(args, "addr", None)
        try:
            return fn(args)
        except UsageError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except grpc.RpcError as e:
            return _rpc_error(e, given or default_address(), default=given is None)
        except OSError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    return wrapper


def on_cpu(status: pb.GetStatusResponse) -> bool:
    """Whether the daemon proves on its CPU backend (its one device is the CPU)."""
    return bool(status.gpus) and all(g.name.split(" ")[0] == "cpu" for g in status.gpus)


@guard
def cmd_single(args: argparse.Namespace) -> int:
    tpl = build_template(args)
    with _client(args) as c:
        cpu = on_cpu(c.status())
        t = time.perf_counter()
        with Ticker(f"proving ({tpl.kind.label}, on the {'CPU' if cpu else 'GPU'})"):
            resp = c.prove(tpl.fresh())
        wall = time.perf_counter() - t
    print_result(resp, wall, cpu)
    if resp.status != pb.AwaitProofResponse.COMPLETED:
        return 1
    for path, data, what in (
        (args.out, resp.proof, "bellperson bytes"),
        (args.out_hex, resp.proof.hex().encode() + b"\n", "hex"),
    ):
        if path is not None:
            try:
                path.write_bytes(data)
            except OSError as e:
                raise UsageError(f"--out{'-hex' if what == 'hex' else ''} {path}: {e}") from e
            print(f"written:   {path} ({what}, {len(data)} bytes)")
    return 0


def print_result(resp: pb.AwaitProofResponse, wall_s: float, cpu: bool = False) -> None:
    print("\n=== Proof Result ===")
    print(f"status:    {STATUS.get(resp.status, 'UNKNOWN')}")
    print(f"job_id:    {resp.job_id}")
    if resp.status == pb.AwaitProofResponse.COMPLETED:
        prove = "cpu" if cpu else "gpu"
        print(
            f"timings:   total={resp.total_ms} ms (queue={resp.queue_wait_ms} ms, "
            f"srs={resp.srs_load_ms} ms, synth={resp.synthesis_ms} ms, "
            f"{prove}={resp.gpu_compute_ms} ms)"
        )
        print(f"wall time: {round(wall_s * 1000)} ms")
        # The daemon returns no proof it has not verified (docs/SERVICE.md).
        print("verified:  yes (the daemon verifies every proof before it returns it)")
        shown = resp.proof.hex() if len(resp.proof) <= 256 else resp.proof[:128].hex() + "..."
        print(f"proof:     {len(resp.proof)} bytes (hex: {shown})")
    else:
        print(f"error:     {resp.error_message}")


@guard
def cmd_batch(args: argparse.Namespace) -> int:
    tpl = build_template(args)
    if args.probe is None:
        if args.baseline:
            raise UsageError("--baseline compares a batch with and without --probe: give --probe")
        with _client(args) as c:
            c.status(timeout=30)  # an unreachable daemon is said so once, not as N failed proofs
            return run_batch(c, tpl, args.type, args.count, args.concurrency)
    from cuzk.engine.config import parse_duration
    from cuzk.errors import InputError

    try:
        every = parse_duration(args.probe_every, "batch", "--probe-every")
    except InputError as e:
        raise UsageError(str(e)) from e
    if every <= 0:
        raise UsageError("--probe-every: the interval must be positive")
    probe_kind = TYPES.get(args.probe.lower())
    needs_vanilla = probe_kind not in (None, ProofKind.DEMO, ProofKind.POREP_SEAL_COMMIT)
    if needs_vanilla and args.probe_vanilla is None:
        raise UsageError(f"--probe-vanilla required for {args.probe} probes")
    probe_args = argparse.Namespace(**vars(args))
    probe_args.type, probe_args.vanilla = args.probe, args.probe_vanilla
    probe_args.priority = args.probe_priority
    probe_args.constraints = args.probe_constraints or args.constraints
    probe_args.partitions = 1
    probe_tpl = build_template(probe_args)
    # the probes' own connection, open for the whole run
    with _client(args) as c, _client(args) as probe_client:
        c.status(timeout=30)
        probe = Probe(probe_tpl, args.probe, every, probe_client)
        return run_batch(c, tpl, args.type, args.count, args.concurrency, probe, args.baseline)


def _rate(value: str, flag: str) -> float:
    """Proofs per second from ``1/30s``, ``2/1m``, ``0.5/s``."""
    from cuzk.engine.config import parse_duration

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*/\s*(\d*(?:\.\d+)?)\s*([a-z]*)\s*", value)
    if not m:
        raise UsageError(f"--{flag}: {value!r} is not a rate (examples: 1/30s, 2/1m)")
    per = parse_duration((m.group(2) or "1") + m.group(3), "stress", flag)
    if per <= 0:
        raise UsageError(f"--{flag}: the period must be positive")
    return float(m.group(1)) / per


@guard
def cmd_stress(args: argparse.Namespace) -> int:
    from cuzk.engine.config import parse_duration

    duration = parse_duration(args.duration, "stress", "duration")
    rng = random.Random(args.seed)
    streams: list[tuple[str, float, Any]] = []
    if args.demo_rate:
        circuit = demo.circuit_for_constraints(args.constraints)
        prios = [Priority.LOW, Priority.NORMAL, Priority.NORMAL, Priority.HIGH, Priority.CRITICAL]

        def make_demo() -> pb.SubmitProofRequest:
            p = (
                rng.choice(prios)
                if args.demo_priority == "mixed"
                else Priority[args.demo_priority.upper()]
            )
            return pb.SubmitProofRequest(
                request_id=str(uuid.uuid4()),
                proof_kind=int(ProofKind.DEMO),
                priority=int(p),
                vanilla_proof=demo.make_vanilla(circuit, args.partitions),
            )

        streams.append(("demo", _rate(args.demo_rate, "demo-rate"), make_demo))
    for name, path_flag, kind in (
        ("porep", "porep_c1", ProofKind.POREP_SEAL_COMMIT),
        ("wpost", "wpost_vanilla", ProofKind.WINDOW_POST_PARTITION),
        ("winning", "winning_vanilla", ProofKind.WINNING_POST),
        ("snap", "snap_vanilla", ProofKind.SNAP_DEALS_UPDATE),
    ):
        rate_arg = getattr(args, f"{name}_rate")
        path = getattr(args, path_flag)
        if rate_arg is None and path is None:
            continue
        if rate_arg is None or path is None:
            raise UsageError(f"--{name}-rate and --{path_flag.replace('_', '-')} go together")
        ns = argparse.Namespace(
            type=name,
            c1=path if kind == ProofKind.POREP_SEAL_COMMIT else None,
            vanilla=None if kind == ProofKind.POREP_SEAL_COMMIT else path,
            registered_proof=0,
            sector_size=None,
            sector_num=1,
            miner_id=1000,
            randomness=None,
            comm_r_old=None,
            comm_r_new=None,
            comm_d_new=None,
            priority=None,
            constraints=0,
            partitions=0,
            c1_flag=f"--{path_flag.replace('_', '-')}",
            vanilla_flag=f"--{path_flag.replace('_', '-')}",
        )
        streams.append((name, _rate(rate_arg, f"{name}-rate"), build_template(ns).fresh))
    if not streams:
        raise UsageError("give at least one rate: --demo-rate, --porep-rate (with --porep-c1), …")

    with _client(args) as c:
        c.status(timeout=30)  # an unreachable daemon is said so once
        return run_stress(c, streams, duration, args.concurrency, rng)


@guard
def cmd_status(args: argparse.Namespace) -> int:
    with _client(args) as c:
        s = c.status()
    print("=== cuzk daemon status ===")
    print(f"uptime:           {s.uptime_seconds}s")
    print(f"proofs completed: {s.total_proofs_completed}")
    print(f"proofs failed:    {s.total_proofs_failed}")
    cpu = on_cpu(s)
    memory = "host memory:   " if cpu else "pinned memory: "
    print(f"{memory}   {s.pinned_memory_bytes} / {s.pinned_memory_limit_bytes} bytes")
    if s.gpus:
        print("\nDevices (CPU backend):" if cpu else "\nGPUs:")
        unit = "of the host budget" if cpu else "VRAM"
        for g in s.gpus:
            job = (
                f"proving {g.current_proof_kind} ({g.current_job_id[:8]})"
                if g.current_job_id
                else "idle"
            )
            print(
                f"  [{g.ordinal}] {g.name} — {g.vram_free_bytes >> 20} MiB / "
                f"{g.vram_total_bytes >> 20} MiB {unit} — {job}"
            )
    if s.loaded_srs:
        print("\nLoaded SRS:")
        for e in s.loaded_srs:
            print(
                f"  {e.circuit_id} (tier={TIERS.get(e.tier, e.tier)}, size={e.size_bytes} bytes, "
                f"refs={e.ref_count})"
            )
    if s.queues:
        print("\nQueues:")
        for q in s.queues:
            print(f"  {q.proof_kind}: pending={q.pending}, in_progress={q.in_progress}")
    return 0


@guard
def cmd_preload(args: argparse.Namespace) -> int:
    with _client(args) as c, Ticker(f"loading {args.circuit_id}"):
        r = c.preload(args.circuit_id)
    if r.already_loaded:
        print(f"{args.circuit_id} already loaded")
    else:
        print(f"{args.circuit_id} loaded in {r.load_time_ms} ms")
    return 0


@guard
def cmd_evict(args: argparse.Namespace) -> int:
    with _client(args) as c:
        listed = {e.circuit_id: e.size_bytes for e in c.status().loaded_srs}
        r = c.evict(args.circuit_id)
    if r.was_loaded:
        # status lists the key's own size; its load also held the circuit's matrices
        # and staging, which the eviction frees with it
        size = listed.get(args.circuit_id)
        key = f"the key's {size} bytes, as status lists it, " if size else ""
        print(
            f"{args.circuit_id} evicted, {r.freed_bytes} bytes of memory freed "
            f"({key}with its circuit's matrices and load staging)"
        )
    else:
        print(f"{args.circuit_id} was not loaded")
    return 0


@guard
def cmd_metrics(args: argparse.Namespace) -> int:
    with _client(args) as c:
        sys.stdout.write(c.metrics())
    return 0
