"""Connections and descriptors: what one client may hold of the daemon's.

The process's descriptor limit is raised to its hard limit at start
(:func:`raise_fd_limit`) and :data:`FD_RESERVE` of it kept for the daemon's
own files (the journal, key files, synthesis processes' pipes): the gRPC
listeners together accept at most :func:`connection_budget` connections
(``[daemon] max_connections``, lowered to what the descriptors allow), so a
flood of idle connections is refused at the door instead of failing a job
that opens a key file with "Too many open files". A connection that never
finishes its handshake is closed after :data:`HANDSHAKE_TIMEOUT_MS`, one
with no call for :data:`IDLE_TIMEOUT_MS` is closed too (a client's channel
reconnects by itself), and one peer host may have calls in flight on at most
``max_connections_per_peer`` connections at once (:class:`PeerConnections`).
The status listener has its own, smaller limits (:mod:`cuzk.service.http`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import resource
import threading

log = logging.getLogger(__name__)

# Descriptors kept for the daemon's own files, whatever the connections take.
FD_RESERVE = 512
# A client that retries (grpc's wait_for_ready) gets in within about this long while
# one host holds every connection without beginning a handshake (issue 32); Curio's
# client sends its HTTP/2 preface (and TLS hello) at once after connecting.
HANDSHAKE_TIMEOUT_MS = 5_000
IDLE_TIMEOUT_MS = 300_000
# The hard limit may be "unlimited"; the soft one is raised no further than this.
FD_CEILING = 1 << 20


def raise_fd_limit() -> int:
    """The soft RLIMIT_NOFILE raised to the hard one (at most FD_CEILING); the soft
    limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = FD_CEILING if hard == resource.RLIM_INFINITY else min(hard, FD_CEILING)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return FD_CEILING if soft == resource.RLIM_INFINITY else soft
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def connection_budget(max_connections: int, listeners: int, fd_limit: int | None = None) -> int:
    """Connections each of ``listeners`` TCP listeners may hold: ``max_connections``
    shared among them, within the descriptors left after FD_RESERVE (and the status
    listener's, counted by the caller in ``listeners``)."""
    if fd_limit is None:
        fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if fd_limit == resource.RLIM_INFINITY:
            fd_limit = FD_CEILING
    room = max(16, fd_limit - FD_RESERVE)
    return max(1, min(max_connections, room) // max(1, listeners))


def peer_host(peer: str) -> tuple[str, str] | None:
    """(host, port) of a gRPC peer string (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``); None
    for a unix socket or anything else."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host, sep, port = rest.rpartition(":")
    if not sep:
        return None
    host = host.strip("[]")
    with contextlib.suppress(ValueError):
        host = str(ipaddress.ip_address(host))
    return host, port


class PeerConnections:
    """Connections with calls in flight, per peer host: a call on a connection that
    would make its host's more than ``per_peer`` is refused (:meth:`enter` False)."""

    def __init__(self, per_peer: int) -> None:
        self.per_peer = per_peer
        self._lock = threading.Lock()
        self._calls: dict[str, dict[str, int]] = {}  # host → {port: calls in flight}

    def enter(self, peer: str) -> bool:
        where = peer_host(peer)
        if where is None:
            return True
        host, port = where
        with self._lock:
            conns = self._calls.setdefault(host, {})
            if port not in conns and len(conns) >= self.per_peer:
                return False
            conns[port] = conns.get(port, 0) + 1
            return True

    def leave(self, peer: str) -> None:
        where = peer_host(peer)
        if where is None:
            return
        host, port = where
        with self._lock:
            conns = self._calls.get(host)
            if conns is None or port not in conns:
                return
            conns[port] -= 1
            if conns[port] <= 0:
                del conns[port]
            if not conns:
                del self._calls[host]

    def connections(self, host: str) -> int:
        with self._lock:
            return len(self._calls.get(host, {}))
