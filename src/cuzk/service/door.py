"""The door of the gRPC listeners: new connections from hosts that hold too many.

grpc accepts a TCP connection before anyone can see whose it is, and past its
cap (``grpc.max_allowed_incoming_connections``) closes the new one, whoever
it is from. Hosts that reopen connections as fast as they are closed (issue
32's reconnect flood: ~37,000 a second from 64 loopback addresses) keep it
full, and a new client is refused every try. :class:`Door` counts the
connections each host holds on the listeners' ports (the kernel's table,
``/proc/net/tcp`` and ``tcp6``) and drops the handshake packets (SYN) of
hosts that hold too many with a socket filter on grpc's listening sockets
(classic BPF, ``SO_ATTACH_FILTER``: what a firewall's connlimit does, without
privileges). A host is held back while it has ``per_host`` connections
(``[daemon] max_connections_per_peer``), or :data:`CROWD` when the listeners
hold all but :data:`RESERVE_SHARE` of their places: the reserve is left for
hosts with few connections (Curio's client keeps one). Connections already
open keep working (a filter is copied into a connection when it is accepted,
and a host's own connections were accepted while it was let in); a held-back
host's connect waits in its retransmissions and gets in once it holds fewer
(:data:`HOLD_S` after it was last at its limit). While the listeners are
crowded, a held-back host's connections that have not sent a byte for
:data:`EVICT_AFTER_MS` are shut down (grpc would close them only after its
handshake timeout, :data:`cuzk.service.limits.HANDSHAKE_TIMEOUT_MS`), so a new
client finds a place at its first try.

Linux only: elsewhere (or without ``/proc``) the door does nothing and says so
once.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import logging
import os
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.engine.ratelog import RateLimitedLog

log = logging.getLogger(__name__)

# Part of the listeners' places kept for hosts with few connections.
RESERVE_SHARE = 8  # one eighth
# With the reserve reached, a host with this many connections is held back.
CROWD = 8
# How often the connections are counted (seconds).
PERIOD_S = 0.25
# The most hosts one filter holds back (a classic BPF program has at most 4096
# steps; an IPv6 host takes 9).
MAX_HELD = 400

# A host at its limit is held back this long after it was last seen there (seconds).
HOLD_S = 10.0
# A held-back host's connection that has sent nothing for this long is shut down while
# the listeners are crowded (a client sends its HTTP/2 preface at once).
EVICT_AFTER_MS = 1000

_SO_ATTACH_FILTER = 26
# struct tcp_info (linux/tcp.h): tcpi_last_data_recv and tcpi_bytes_received
_LAST_DATA_RECV, _BYTES_RECEIVED, _TCP_INFO_LEN = 52, 128, 136
_SKF_NET_OFF = -0x100000


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


_LDB, _LDW, _AND, _JEQ, _JA, _RET = 0x30, 0x20, 0x54, 0x15, 0x05, 0x06


def syn_filter(held: Iterable[str]) -> bytes:
    """A classic BPF program (its instructions, 8 bytes each) that drops every packet
    from the hosts ``held`` (IPv4 or IPv6 text; an IPv4-mapped IPv6 address is its
    IPv4 host) and lets every other through. Each held host is tested where a
    match drops at once, so no jump is longer than a few steps."""
    v4: list[int] = []
    v6: list[tuple[int, ...]] = []
    for host in held:
        ip = ipaddress.ip_address(host)
        mapped = getattr(ip, "ipv4_mapped", None)
        if isinstance(ip, ipaddress.IPv4Address) or mapped is not None:
            v4.append(int(mapped or ip))
        else:
            v6.append(struct.unpack("!4I", ip.packed))
    part4 = [_insn(_LDW, 0, 0, _SKF_NET_OFF + 12)]  # the IPv4 source
    for addr in v4:
        part4 += [_insn(_JEQ, 0, 1, addr), _insn(_RET, 0, 0, 0)]
    part6: list[bytes] = []
    for words in v6:  # the IPv6 source, a word at a time; a differing word skips on
        for n, word in enumerate(words):
            part6.append(_insn(_LDW, 0, 0, _SKF_NET_OFF + 8 + 4 * n))
            last = n == 3
            part6.append(_insn(_JEQ, 0, 1 if last else 7 - 2 * n, word))
        part6.append(_insn(_RET, 0, 0, 0))
    part4.append(_insn(_JA, 0, 0, len(part6)))  # to accept
    head = [
        _insn(_LDB, 0, 0, _SKF_NET_OFF),  # the IP version, in the high four bits
        _insn(_AND, 0, 0, 0xF0),
        _insn(_JEQ, 0, 1, 0x40),
        _insn(_JA, 0, 0, 3),  # to the IPv4 part
        _insn(_JEQ, 0, 1, 0x60),
        _insn(_JA, 0, 0, 1 + len(part4)),  # to the IPv6 part
        _insn(_JA, 0, 0, len(part4) + len(part6)),  # neither: to accept
    ]
    accept = [_insn(_RET, 0, 0, 0xFFFFFFFF)]
    return b"".join(head + part4 + part6 + accept)


@dataclass
class Door:
    """Holds back hosts with too many connections on ``ports`` (see the module)."""

    ports: tuple[int, ...]
    places: int  # connections the listeners accept in all
    per_host: int
    exhausted: RateLimitedLog = field(default_factory=lambda: RateLimitedLog(log))
    held: frozenset[str] = frozenset()
    evicted: int = 0  # silent connections of held-back hosts shut down
    _until: dict[str, float] = field(default_factory=dict)  # held host → until when
    _listeners: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _program: ctypes.Array[ctypes.c_char] | None = None

    def start(self) -> bool:
        """Find grpc's listening sockets and begin counting; False (and a line) where
        this system has no socket filters or no ``/proc/net/tcp``."""
        if not Path("/proc/net/tcp").exists() or not hasattr(socket, "SO_ACCEPTCONN"):
            log.info("connection door off: no /proc/net/tcp on this system")
            return False
        self._listeners = listening_sockets(self.ports)
        if not self._listeners:
            log.warning("connection door off: grpc's listening sockets were not found")
            return False
        self._thread = threading.Thread(target=self._run, name="door", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for s in self._listeners:
            s.close()  # our duplicates only: grpc's own descriptors stay open
        self._listeners = []

    def _run(self) -> None:
        while not self._stop.wait(PERIOD_S):
            try:
                table = connections(self.ports)
                self.update(Counter(host for host, _ in table))
                if self.held and self.crowded(len(table)):
                    silent = {inode for host, inode in table if host in self.held}
                    self.evicted += evict_silent(silent, EVICT_AFTER_MS)
            except Exception:
                self.exhausted.log("door", logging.ERROR, "connection door failed", exc_info=True)

    def crowded(self, total: int) -> bool:
        """Whether ``total`` connections reach into the reserve."""
        return total >= self.places - max(1, self.places // RESERVE_SHARE)

    def decide(self, by_host: Counter[str], now: float | None = None) -> frozenset[str]:
        """The hosts to hold back, given the connections each holds now: those at
        their limit, and for HOLD_S after (a host whose silent connections were
        shut down would otherwise be let in again to fill the places at once)."""
        now = time.monotonic() if now is None else now
        limit = self.per_host
        if self.crowded(sum(by_host.values())):
            limit = min(limit, CROWD)
        for h, n in by_host.items():
            if n >= limit:
                self._until[h] = now + HOLD_S
        for h in [h for h, t in self._until.items() if t <= now]:
            del self._until[h]
        ranked = sorted(self._until, key=lambda h: -by_host.get(h, 0))
        return frozenset(ranked[:MAX_HELD])

    def update(self, by_host: Counter[str]) -> None:
        held = self.decide(by_host)
        if held == self.held:
            return
        new = sorted(held - self.held, key=lambda h: -by_host.get(h, 0))
        if new:  # one line for all of them, at most ten a minute (a flood from many hosts)
            self.exhausted.warning(
                "door",
                "holding back new connections from %d host(s) with too many open (%s; "
                "[daemon] max_connections_per_peer %d, %d places, %d held back in all)",
                len(new),
                ", ".join(f"{h}: {by_host.get(h, 0)}" for h in new[:3]),
                self.per_host,
                self.places,
                len(held),
            )
        self.attach(held)

    def attach(self, held: frozenset[str]) -> None:
        prog = syn_filter(held)
        buf = ctypes.create_string_buffer(prog, len(prog))
        fprog = struct.pack("HL", len(prog) // 8, ctypes.addressof(buf))
        for s in self._listeners:
            s.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
        self._program = buf  # the kernel copies it; kept until the next for clarity
        self.held = held


def listening_sockets(ports: Iterable[int]) -> list[socket.socket]:
    """Duplicates of this process's listening TCP sockets on ``ports``."""
    want = set(ports)
    found = []
    seen = set()  # sockets by inode: a duplicate made here may take a listed number
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{fd}")
            if not link.startswith("socket:") or link in seen:
                continue
            seen.add(link)
            s = socket.socket(fileno=os.dup(fd))
            try:
                listening = s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                is_tcp = s.type == socket.SOCK_STREAM and s.family in (
                    socket.AF_INET,
                    socket.AF_INET6,
                )
                if listening and is_tcp and s.getsockname()[1] in want:
                    found.append(s)
                    continue
            except OSError:
                pass
            s.close()
    return found


def _host(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # /proc/net/tcp6: four 32-bit words, each in host (little-endian) order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    ip = ipaddress.IPv6Address(words)
    return str(ip.ipv4_mapped or ip)


def connections(ports: Iterable[int], root: str = "/proc/net") -> list[tuple[str, str]]:
    """(remote host, socket inode) of each connection (open, or half-open in its
    handshake) on local ``ports``, from the kernel's tables."""
    # one pattern over the whole table (the machine's other connections, a Lotus
    # node's thousands included, are skipped at the regular expression's speed)
    local = "|".join(f"{p:04X}" for p in ports)
    row = re.compile(
        r"^ *\d+: [0-9A-F]+:(?:" + local + r") ([0-9A-F]+):[0-9A-F]{4} (?:01|03) (?:\S+ +){5}(\d+)",
        re.M,
    )
    found = []
    for table in ("tcp", "tcp6"):
        try:
            text = Path(root, table).read_text()
        except OSError:
            continue
        found += [(_host(remote), inode) for remote, inode in row.findall(text)]
    return found


def connections_by_host(ports: Iterable[int], root: str = "/proc/net") -> Counter[str]:
    """How many connections on local ``ports`` each remote host has."""
    return Counter(host for host, _ in connections(ports, root))


def silent_ms(sock: socket.socket) -> int | None:
    """How long ``sock`` has been open without receiving a byte (ms; from TCP_INFO);
    None once it has received any."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    if len(info) < _TCP_INFO_LEN:
        return None
    (received,) = struct.unpack_from("Q", info, _BYTES_RECEIVED)
    (since,) = struct.unpack_from("I", info, _LAST_DATA_RECV)
    return None if received else since


def evict_silent(inodes: set[str], after_ms: int) -> int:
    """Shut down this process's connections among ``inodes`` that have received no
    byte in ``after_ms`` (their owner, grpc, sees them end and closes them); how many."""
    evicted = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{name}")
            if not link.startswith("socket:[") or link[8:-1] not in inodes:
                continue
            inodes.discard(link[8:-1])
            with socket.socket(fileno=os.dup(int(name))) as s:
                quiet = silent_ms(s)
                if quiet is not None and quiet >= after_ms:
                    s.shutdown(socket.SHUT_RDWR)
                    evicted += 1
    return evicted
