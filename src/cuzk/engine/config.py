"""The daemon's configuration: typed dataclasses loaded from TOML.

Sections and keys follow Curio's cuzk where they mean the same thing
(``[daemon] listen``, ``[memory] total_budget``, ``[gpus]
gpu_workers_per_device``, ``[scheduler] max_batch_size`` …), so an operator's
``cuzk.toml`` carries over. Keys Curio has that do nothing here are accepted
and reported once in the log; keys Curio marks deprecated are accepted with a
warning; any other unknown key or section is ignored with a warning that names
it, as Curio's daemon ignores them (a newer Curio config must not stop the
daemon); a known key with a bad value is an error. docs/SERVICE.md lists
every key, docs/MIGRATING.md what becomes of each of Curio's.

A config file is taken to be a Curio config: the keys it leaves out get
Curio's defaults where the two differ (the socket ``unix:///run/curio/cuzk.sock``,
the parameters folder ``/data/zk/params``); the daemon run with no config file
gets them too, as Curio's does. The built-in defaults (``Config()``: the daemon's
``--no-config``, ``make demo``, the tools) keep everything under ``$CUZK_HOME``.

A daemon's state (its journal and the lock on it) lives in a folder of its own
named after its first listen address (:func:`state_dir`) unless ``[daemon]
journal`` says otherwise, so that daemons with different addresses on one host
(one per GPU) never share a journal, and the same address twice is refused by
the journal's lock.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cuzk.errors import InputError

log = logging.getLogger(__name__)

# [pipeline] synthesis_processes = "auto" (the default): PipelineConfig.processes_for
AUTO_PROCESSES = -1

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": 1024 * GIB,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}
_DURATION_UNITS = {"": 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_size(value: str | int, source: str = "config", field_name: str = "size") -> int:
    """Bytes from ``"5GiB"``, ``"512MiB"``, ``"10GB"`` or a plain integer."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InputError(source, field_name, f"{value} is negative")
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise InputError(
            source, field_name, f"{value!r} is not a size (examples: 5GiB, 512MiB, 1073741824)"
        )
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_duration(value: str | int | float, source: str = "config", field_name: str = "") -> float:
    """Seconds from ``"5m"``, ``"300s"``, ``"250ms"``, ``"1h"`` or a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InputError(source, field_name, f"{value} is not finite")
        if value < 0:
            raise InputError(source, field_name, f"{value} is negative")
        return float(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value))
    if not m or m.group(2) not in _DURATION_UNITS:
        raise InputError(
            source, field_name, f"{value!r} is not a duration (examples: 250ms, 30s, 5m, 1h)"
        )
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


def cuzk_home() -> Path:
    """Where the daemon keeps its state by default: ``$CUZK_HOME`` or ~/.cache/cuzk."""
    env = os.environ.get("CUZK_HOME")
    return Path(env) if env else Path.home() / ".cache" / "cuzk"


def _default_listen() -> str:
    return f"unix://{cuzk_home() / 'cuzk.sock'}"


def listen_identity(addr: str) -> str:
    """One spelling of a listen address: ``unix:`` + the absolute socket path, or
    ``tcp:`` + host:port without a scheme (``http://0.0.0.0:9820/`` and
    ``0.0.0.0:9820`` are one address)."""
    if addr.startswith("unix:"):
        path = addr[len("unix://") :] if addr.startswith("unix://") else addr[len("unix:") :]
        return "unix:" + os.path.abspath(path)
    for scheme in ("http://", "https://", "tcp://", "grpc://"):
        addr = addr.removeprefix(scheme)
    return "tcp:" + addr.rstrip("/").lower()


def state_dir(listen: str) -> Path:
    """The default state folder of a daemon listening first on ``listen``:
    ``$CUZK_HOME/daemons/<address, readable>-<8 hex of its hash>``."""
    ident = listen_identity(listen)
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", ident).strip("_")[-60:]
    digest = hashlib.sha256(ident.encode()).hexdigest()[:8]
    return cuzk_home() / "daemons" / f"{readable}-{digest}"


# Curio's cuzk: where its systemd unit keeps the config, and the defaults it gives
# the keys a config file leaves out (extern/cuzk/cuzk-core/src/config.rs).
CURIO_CONFIG_PATH = Path("/data/zk/cuzk.toml")
CURIO_LISTEN = "unix:///run/curio/cuzk.sock"
CURIO_PARAM_CACHE = "/data/zk/params"
# Curio's max_parallel_synthesis default, which its 0 also means.
DEFAULT_MAX_PARALLEL_SYNTHESIS = 18


@dataclass(frozen=True)
class DaemonConfig:
    # One address or several: "unix:///path.sock", "127.0.0.1:9820", "[::1]:9820".
    listen: tuple[str, ...] = field(default_factory=lambda: (_default_listen(),))
    status_listen: str = ""  # HTTP /metrics and /status; "" disables
    auth_token_file: str = ""  # bearer token, required on TCP listeners beyond loopback
    # Plain TCP without a token on a non-loopback address (Curio's client sends none):
    # anyone who reaches the port can submit proofs. Off unless set.
    allow_insecure_tcp: bool = False
    tls_cert_file: str = ""
    tls_key_file: str = ""
    max_message_size: int = 128 * MIB
    journal: str = ""  # SQLite journal; "" = journal.sqlite in state_dir(listen[0])
    job_retention: float = 24 * 3600.0  # finished jobs stay answerable this long
    shutdown_timeout: float = 600.0  # SIGTERM: finish accepted work for at most this long
    # threads that run calls' work (parsing a request, journalling it, status); a
    # caller waiting in AwaitProof or Prove holds none
    grpc_threads: int = 64
    # how often the status page's history is sampled (it keeps the last hour)
    status_sample_interval: float = 5.0
    # finished jobs kept answerable (within job_retention): the oldest go first
    max_retained_jobs: int = 10_000
    # open gRPC and status connections, in all and from one peer address
    max_connections: int = 4096
    max_connections_per_peer: int = 256

    def journal_path(self) -> Path:
        """``journal``, else ``journal.sqlite`` in the first listen address's state folder."""
        return Path(self.journal) if self.journal else state_dir(self.listen[0]) / "journal.sqlite"


@dataclass(frozen=True)
class AdmissionConfig:
    """Limits on work accepted and not finished: a request over one is refused
    (RESOURCE_EXHAUSTED, naming the limit) before it is parsed or journalled. Per
    kind, so that a flood of one kind cannot keep the others out; in total, so that
    all of them together stay within what the host can hold. Request bytes are the
    vanilla proofs a job carries until it ends (held in memory and in the journal)."""

    max_pending_jobs: int = 1000
    max_pending_jobs_per_kind: int = 500
    max_pending_bytes: int = 4 * GIB
    max_pending_bytes_per_kind: int = 2 * GIB
    # what requests being parsed may hold at once (a JSON body decodes to up to
    # PARSE_EXPANSION times its size): a request waits for room, then is refused
    max_parsing_bytes: int = 2 * GIB


@dataclass(frozen=True)
class MemoryConfig:
    total_budget: str = "auto"  # "auto" = MemTotal − safety_margin
    safety_margin: int = 5 * GIB
    eviction_min_idle: float = 300.0

    def resolve_total_budget(self) -> int:
        if self.total_budget.strip().lower() == "auto":
            return max(0, detect_system_memory() - self.safety_margin)
        return parse_size(self.total_budget, "config", "memory.total_budget")


def vram_budget_bytes(gpus: GpusConfig, device_total: int, source: str = "config") -> int:
    """A GPU's VRAM budget: ``[gpus] vram_budget`` when set (an InputError when it
    is more than the device has), else ``vram_budget_fraction`` of its memory."""
    text = gpus.vram_budget.strip()
    if not text:
        return int(device_total * gpus.vram_budget_fraction)
    n = parse_size(text, source, "gpus.vram_budget")
    if device_total and n > device_total:
        raise InputError(
            source,
            "gpus.vram_budget",
            f"{text} is more than the GPU's {device_total / 2**30:.1f} GiB of memory",
        )
    return n


@dataclass(frozen=True)
class GpusConfig:
    devices: tuple[int, ...] = ()  # empty = every CUDA device, or the CPU when there is none
    gpu_workers_per_device: int = 2
    backend: str = "auto"  # auto | cpu | cuda
    vram_budget_fraction: float = 0.9  # of each device's memory
    # An absolute VRAM budget per device ("24GiB"), at most the device's memory:
    # "" = the fraction above. One large GPU can stand in for a smaller card.
    vram_budget: str = ""
    # A device whose backend failed takes no work; it is probed this long after the
    # failure and after each failed probe, and takes work again when a probe passes.
    recovery_probe_interval: float = 60.0
    # VRAM kept on each GPU for time-critical proofs (CRITICAL and HIGH: WinningPoSt,
    # WindowPoSt), which PoRep and SnapDeals partitions may not take: "auto" (the
    # largest working set of a CRITICAL (WinningPoSt) partition there), a size, "0" (off)
    time_critical_vram: str = "auto"
    # Where a key's L, A and B bases stream (lean tiers), a GPU worker keeps the
    # partitions of a circuit it proves in a row with their L, A and B scalars
    # as compact sets in host memory and runs those MSMs once for them all, so
    # the bases cross PCIe once a group: 0 = a group is a job's partitions (at
    # most), N = at most N, 1 = off (each partition its own passes).
    shared_pass_partitions: int = 0

    def time_critical_bytes(self, source: str = "config") -> int | None:
        """``time_critical_vram`` in bytes; None for ``"auto"``."""
        text = self.time_critical_vram.strip()
        if text == "auto":
            return None
        return parse_size(text, source, "gpus.time_critical_vram")


@dataclass(frozen=True)
class SchedulerConfig:
    max_batch_size: int = 1
    max_batch_wait_ms: int = 10000


@dataclass(frozen=True)
class PipelineConfig:
    synthesis_concurrency: int = 1
    # 0: synthesis runs in the synthesis workers' threads; N: in a pool of N
    # worker processes (witnesses on N cores; see engine/synthpool.py);
    # AUTO_PROCESSES ("auto" in the file): a pool when the devices are CUDA GPUs
    # (PipelineConfig.processes_for), threads otherwise
    synthesis_processes: int = AUTO_PROCESSES
    # Where a partition's assignment is made: "device" (on the GPU that proves
    # it, from the circuit's static witness plan: the synthesis workers only
    # check the vanilla proofs and make the hints), "host" (the CPU witness,
    # in the synthesis workers), "auto" (device when every device is a CUDA GPU
    # and the kind has a device witness).
    witness: str = "auto"
    synthesis_lookahead: int = 1  # synthesized partitions waiting for a GPU worker
    max_parallel_synthesis: int = DEFAULT_MAX_PARALLEL_SYNTHESIS  # 0: the default, as in Curio
    epilogue_workers: int = 1

    def processes_for(self, on_gpu: bool, cores: int | None = None) -> int:
        """Synthesis processes to start: the configured number, or for ``"auto"``
        half the cores (at most 8) on a GPU machine, whose GPU workers launch
        their kernels from the daemon's interpreter (Python work beside them in
        the daemon slowed a 32GiB PoRep partition's MSMs up to tenfold), and
        none (threads) elsewhere."""
        if self.synthesis_processes != AUTO_PROCESSES:
            return self.synthesis_processes
        if not on_gpu:
            return 0
        return max(1, min(8, (cores if cores is not None else os.cpu_count() or 2) // 2))

    def parallel_synthesis_limit(self) -> int:
        """``max_parallel_synthesis`` as Curio reads it: 0 is the default (18), not one."""
        return self.max_parallel_synthesis or DEFAULT_MAX_PARALLEL_SYNTHESIS


# Where Filecoin's parameter tools (paramfetch, curio fetch-params) put the files.
FIL_PARAMETER_CACHE_ENV = "FIL_PROOFS_PARAMETER_CACHE"
FIL_PARAMETER_CACHE_DEFAULT = "/var/tmp/filecoin-proof-parameters"


@dataclass(frozen=True)
class SrsConfig:
    param_cache: str = ""  # "" = $CUZK_HOME/params
    # Development parameters (INSECURE, single-party setup) are generated on
    # first use for the demo kind always; for Filecoin kinds only when this is
    # true, which also lets the daemon prove with development files found
    # under Filecoin's names (their .vk is not the published one).
    generate_dev_keys: bool = False
    # Disk for the development keys of demo sizes (cuzk-dev-demo-r<R>-w<W>.params/.vk
    # in param_cache): the least recently used are deleted to stay within it.
    dev_key_disk_budget: int = 2 * GIB
    # Circuits whose keys the daemon loads at start (Curio's deprecated
    # ``preload`` stays ignored): those of the time-critical kinds (WinningPoSt,
    # WindowPoSt) first, served while the others load
    load_at_start: tuple[str, ...] = ()

    def cache_dir(self) -> Path:
        """The first folder searched for keys, and where generated ones are written."""
        return Path(self.param_cache) if self.param_cache else cuzk_home() / "params"

    def search_dirs(self) -> list[Path]:
        """Folders searched for a key's .params / .vk files, in order:
        ``param_cache`` (or $CUZK_HOME/params), ``$FIL_PROOFS_PARAMETER_CACHE``,
        then /var/tmp/filecoin-proof-parameters."""
        dirs = [self.cache_dir()]
        env = os.environ.get(FIL_PARAMETER_CACHE_ENV)
        if env:
            dirs.append(Path(env))
        dirs.append(Path(FIL_PARAMETER_CACHE_DEFAULT))
        out: list[Path] = []
        for d in dirs:
            if d not in out:
                out.append(d)
        return out


@dataclass(frozen=True)
class LoggingConfig:
    level: str = "info"
    format: str = ""  # "" = text, "json"


@dataclass(frozen=True)
class Config:
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    gpus: GpusConfig = field(default_factory=GpusConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    srs: SrsConfig = field(default_factory=SrsConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    def with_overrides(self, **sections: dict[str, Any]) -> Config:
        """A copy with some keys replaced: ``with_overrides(daemon={"listen": ...})``."""
        out = self
        for name, values in sections.items():
            section = getattr(out, name)
            out = replace(out, **{name: _section_from(name, type(section), values, section)})
        return out


# Curio keys that have no effect here (its thread pools and slot pipeline are
# Rust specifics); accepted so that a Curio cuzk.toml loads unchanged.
_IGNORED = {
    "gpus": {"gpu_threads"},
    "scheduler": {"sort_by_type"},
    "synthesis": {"threads"},
    "pipeline": {"enabled", "slot_size", "max_gpu_queue_depth"},
}
_DEPRECATED = {
    "memory": {"pinned_budget", "working_memory_budget"},
    "synthesis": {"partition_workers"},
    "srs": {"preload"},
}
_SECTIONS = {
    "daemon": DaemonConfig,
    "admission": AdmissionConfig,
    "memory": MemoryConfig,
    "gpus": GpusConfig,
    "scheduler": SchedulerConfig,
    "pipeline": PipelineConfig,
    "srs": SrsConfig,
    "logging": LoggingConfig,
    "synthesis": None,  # Curio's section; only ignored/deprecated keys here
}
_SIZE_KEYS = {
    ("memory", "safety_margin"),
    ("daemon", "max_message_size"),
    ("admission", "max_pending_bytes"),
    ("admission", "max_pending_bytes_per_kind"),
    ("admission", "max_parsing_bytes"),
    ("srs", "dev_key_disk_budget"),
}
_DURATION_KEYS = {
    ("memory", "eviction_min_idle"),
    ("daemon", "job_retention"),
    ("daemon", "shutdown_timeout"),
    ("daemon", "status_sample_interval"),
    ("gpus", "recovery_probe_interval"),
}


def _coerce(section: str, key: str, value: Any, default: Any, source: str) -> Any:
    where = f"{section}.{key}"
    if (section, key) == ("pipeline", "synthesis_processes") and value == "auto":
        return AUTO_PROCESSES
    if (section, key) in _SIZE_KEYS:
        return parse_size(value, source, where)
    if (section, key) in _DURATION_KEYS:
        return parse_duration(value, source, where)
    if section == "daemon" and key == "listen":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or not all(isinstance(s, str) for s in items):
            raise InputError(source, where, "expected an address or a list of addresses")
        return tuple(items)
    if (section, key) == ("gpus", "time_critical_vram") and isinstance(value, int):
        return str(parse_size(value, source, where))
    if (section, key) == ("srs", "load_at_start"):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InputError(source, where, 'expected a list of circuit ids ("porep-32g", …)')
        return tuple(value)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise InputError(source, where, "expected a list of integers")
        return tuple(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise InputError(source, where, f"expected true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(source, where, f"expected an integer, got {value!r}")
        if value < 0:
            raise InputError(source, where, f"{value} is negative")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(source, where, f"expected a number, got {value!r}")
        if not math.isfinite(value):
            raise InputError(source, where, f"{value} is not finite")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise InputError(source, where, f"expected a string, got {value!r}")
        return value
    raise AssertionError(f"no coercion for {where}")


def _unknown(source: str, where: str, known: Any) -> None:
    log.warning(
        "%s: %s: unknown, ignored (known here: %s); check its spelling if it was meant for cuzk",
        source,
        where,
        ", ".join(sorted(known)),
    )


def _section_from(
    name: str, cls: type, values: dict[str, Any], base: Any = None, source: str = "config"
) -> Any:
    base = base if base is not None else cls()
    known = {f.name: getattr(base, f.name) for f in fields(cls)}
    kwargs = {}
    for key, value in values.items():
        if key in _IGNORED.get(name, ()):
            log.info("%s: [%s] %s has no effect in cuzk (Python); ignored", source, name, key)
            continue
        if key in _DEPRECATED.get(name, ()):
            log.warning("%s: [%s] %s is deprecated (as in Curio) and ignored", source, name, key)
            continue
        if key not in known:
            _unknown(source, f"[{name}] {key}", known)
            continue
        kwargs[key] = _coerce(name, key, value, known[key], source)
    return replace(base, **kwargs)


def config_from_dict(
    data: dict[str, Any], source: str = "config", base: Config | None = None
) -> Config:
    """The config of a parsed TOML document, over ``base`` (the built-in defaults)."""
    cfg = base if base is not None else Config()
    for name, values in data.items():
        if name not in _SECTIONS:
            _unknown(source, f"[{name}]", _SECTIONS)
            continue
        if not isinstance(values, dict):
            raise InputError(source, f"[{name}]", "expected a table")
        cls = _SECTIONS[name]
        if cls is None:
            for key in values:
                if key in _DEPRECATED.get(name, ()):
                    log.warning("%s: [%s] %s is deprecated and ignored", source, name, key)
                elif key in _IGNORED.get(name, ()):
                    log.info("%s: [%s] %s has no effect here; ignored", source, name, key)
                else:
                    _unknown(source, f"[{name}] {key}", _IGNORED.get(name, set()))
            continue
        section = getattr(cfg, name)
        cfg = replace(cfg, **{name: _section_from(name, cls, values, section, source)})
    _validate(cfg, source)
    return cfg


def curio_defaults() -> Config:
    """The built-in defaults with Curio's where a Curio config relies on them."""
    return Config().with_overrides(
        daemon={"listen": CURIO_LISTEN}, srs={"param_cache": CURIO_PARAM_CACHE}
    )


def default_config_path() -> Path | None:
    """Curio's config file when it exists (the daemon run without ``--config``)."""
    return CURIO_CONFIG_PATH if CURIO_CONFIG_PATH.is_file() else None


def daemon_config(path: str | Path | None) -> tuple[Config, str]:
    """The daemon's config and where it came from, as Curio's daemon chooses it:
    the file when it exists, else Curio's defaults (a named file that is missing
    is reported with a warning, not an error: under systemd's Restart=on-failure
    an exit would loop)."""
    if path is None:
        return curio_defaults(), f"none ({CURIO_CONFIG_PATH} not found): Curio's defaults"
    p = Path(path)
    if not p.exists():
        log.warning(
            "%s: config file not found; running on Curio's defaults (listen %s, "
            "param_cache %s), as Curio's daemon does",
            p,
            CURIO_LISTEN,
            CURIO_PARAM_CACHE,
        )
        return curio_defaults(), f"none ({p} not found): Curio's defaults"
    return load_config(p), str(p)


def load_config(path: str | Path | None) -> Config:
    """The config in ``path`` over Curio's defaults, or the built-in defaults when
    ``path`` is None."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InputError(str(p), "", f"cannot read the config file: {e.strerror}") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(str(p), "", f"not valid TOML: {e}") from e
    return config_from_dict(data, str(p), curio_defaults())


def _validate(cfg: Config, source: str) -> None:
    if cfg.daemon.grpc_threads < 1:
        raise InputError(source, "daemon.grpc_threads", "must be at least 1")
    if cfg.daemon.status_sample_interval < 0.1:
        raise InputError(source, "daemon.status_sample_interval", "must be at least 100ms")
    if cfg.daemon.max_message_size < 1024:
        raise InputError(source, "daemon.max_message_size", "must be at least 1KiB")
    for key in ("max_pending_jobs", "max_pending_jobs_per_kind"):
        if getattr(cfg.admission, key) < 1:
            raise InputError(source, f"admission.{key}", "must be at least 1")
    for key in ("max_connections", "max_connections_per_peer", "max_retained_jobs"):
        if getattr(cfg.daemon, key) < 1:
            raise InputError(source, f"daemon.{key}", "must be at least 1")
    for key in ("max_pending_bytes", "max_pending_bytes_per_kind", "max_parsing_bytes"):
        if getattr(cfg.admission, key) < 1:
            raise InputError(source, f"admission.{key}", "must be at least 1 byte")
    if cfg.gpus.gpu_workers_per_device < 1:
        raise InputError(source, "gpus.gpu_workers_per_device", "must be at least 1")
    if cfg.pipeline.synthesis_concurrency < 1:
        raise InputError(source, "pipeline.synthesis_concurrency", "must be at least 1")
    if cfg.pipeline.synthesis_processes < 0 and cfg.pipeline.synthesis_processes != AUTO_PROCESSES:
        raise InputError(
            source, "pipeline.synthesis_processes", 'must be "auto", 0 (threads) or more'
        )
    if cfg.pipeline.witness not in ("auto", "device", "host"):
        raise InputError(source, "pipeline.witness", "expected auto, device or host")
    if cfg.pipeline.epilogue_workers < 1:
        raise InputError(source, "pipeline.epilogue_workers", "must be at least 1")
    if cfg.scheduler.max_batch_size < 1:
        raise InputError(source, "scheduler.max_batch_size", "must be at least 1")
    if cfg.gpus.backend not in ("auto", "cpu", "cuda"):
        raise InputError(source, "gpus.backend", "expected auto, cpu or cuda")
    bad = [i for i in cfg.gpus.devices if i < 0]
    if bad:
        raise InputError(source, "gpus.devices", f"{bad[0]} is not a GPU ordinal (0, 1, …)")
    twice = sorted({i for i in cfg.gpus.devices if cfg.gpus.devices.count(i) > 1})
    if twice:
        raise InputError(source, "gpus.devices", f"lists GPU {twice[0]} more than once")
    if not 0 < cfg.gpus.vram_budget_fraction <= 1:
        raise InputError(source, "gpus.vram_budget_fraction", "must be in (0, 1]")
    if cfg.gpus.vram_budget.strip() and parse_size(
        cfg.gpus.vram_budget, source, "gpus.vram_budget"
    ) < (1 << 30):
        raise InputError(source, "gpus.vram_budget", "must be at least 1GiB")
    cfg.gpus.time_critical_bytes(source)  # "auto" or a size
    if bool(cfg.daemon.tls_cert_file) != bool(cfg.daemon.tls_key_file):
        raise InputError(source, "daemon.tls_cert_file", "TLS needs both a cert and a key file")
    cfg.memory.resolve_total_budget()  # a bad size fails at load, not at first use


def detect_system_memory() -> int:
    """MemTotal from /proc/meminfo (bytes); 16 GiB where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * KIB
    except OSError:
        pass
    log.warning("cannot read /proc/meminfo; assuming 16 GiB of RAM")
    return 16 * GIB
