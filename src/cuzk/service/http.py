"""HTTP on ``[daemon] status_listen``: the live status page (``/``), ``/status`` (JSON)
and ``/metrics`` (Prometheus text).

The listener follows gRPC's rules: TLS when ``tls_cert_file`` and
``tls_key_file`` are set, the bearer token on ``/status`` and ``/metrics``
when ``auth_token_file`` is (``Authorization: Bearer <token>``; Prometheus's
``authorization.credentials_file`` sends it), and plain TCP without a token
only on loopback unless ``allow_insecure_tcp`` (checked with the gRPC
listeners before the daemon starts). The page at ``/`` is static (no state in
it, served without the token); it reads ``/status`` with the token the
operator gives it.

Connections are coroutines on an event loop of their own, never a thread
each: a connection has :data:`REQUEST_TIMEOUT_S` to send its request head (at
most :data:`MAX_HEAD_BYTES`) and to take the answer, at most
:data:`MAX_CONNECTIONS` are open at once (more are answered 503), and one
request is served per connection. When a new connection would pass
:data:`MAX_CONNECTIONS` (or :data:`MAX_CONNECTIONS_PER_PEER` from its host),
the oldest connection still waiting for its request head is closed to make
room (of that host, for the per-host limit): a client that sends its request
at once is served however many slow ones are open (600 slow connections
cut /status to 13 % success before). Idle or slow connections cost a socket
until their time is up or room is needed, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import logging
import ssl
import urllib.parse
from concurrent import futures
from typing import Any

from cuzk.engine.engine import Engine
from cuzk.engine.ratelog import RateLimitedLog
from cuzk.service.aioloop import LoopThread
from cuzk.service.history import StatusHistory
from cuzk.service.identity import parse_tokens
from cuzk.service.server import is_loopback_host

log = logging.getLogger(__name__)
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'"
)

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_TIMEOUT_S = 10.0  # to send the request head, and again to take the answer
MAX_HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 512
MAX_CONNECTIONS_PER_PEER = 128

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


def status_page() -> bytes:
    """The status page: one self-contained HTML file (its CSS and script inline)."""
    return importlib.resources.files("cuzk.service").joinpath("status_page.html").read_bytes()


class StatusServer:
    def __init__(
        self,
        engine: Engine,
        hostport: str,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        history: StatusHistory | None = None,
        loopback_only: str | None = None,
    ) -> None:
        host, _, port = hostport.rpartition(":")
        self.host = host.strip("[]") or "127.0.0.1"
        self.port = int(port)
        self.engine = engine
        self._tokens = parse_tokens(token) if token is not None else None
        # set (the refusal to send): only loopback peers are served
        self._loopback_only = loopback_only
        self._tls = tls
        self.history = history or StatusHistory(engine, engine.config.daemon.status_sample_interval)
        self._loop = LoopThread("http-status")
        self._pool = futures.ThreadPoolExecutor(2, thread_name_prefix="http-status")
        self._server: asyncio.AbstractServer | None = None
        self._open = 0
        self._by_peer: dict[str, int] = {}
        # connections still waiting for their request head, oldest first: closed to
        # make room for a new one
        self._heads: dict[asyncio.StreamWriter, str] = {}
        self.exhausted = RateLimitedLog(log)
        self._page = status_page()
        self.address = f"{self.host}:{self.port}"

    def start(self) -> None:
        self._loop.start()
        self._server = self._loop.call(self._listen(), timeout=30)
        sock = self._server.sockets[0].getsockname()
        self.address = f"{self.host}:{sock[1]}"
        self.history.start()
        scheme = "https" if self._tls is not None else "http"
        log.info("status page, /status and /metrics on %s://%s/", scheme, self.address)

    async def _listen(self) -> asyncio.AbstractServer:
        return await asyncio.start_server(
            self._serve,
            self.host,
            self.port,
            ssl=self._tls,
            ssl_handshake_timeout=REQUEST_TIMEOUT_S if self._tls is not None else None,
            limit=MAX_HEAD_BYTES,
            backlog=MAX_CONNECTIONS,
            reuse_address=True,
        )

    def stop(self) -> None:
        self.history.stop()
        if self._server is not None and self._loop.running:
            with contextlib.suppress(Exception):
                self._loop.call(self._close(), timeout=10)
        self._loop.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    # --- one connection ---------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self._by_peer[host] = self._by_peer.get(host, 0) + 1
        try:
            full = self._open > MAX_CONNECTIONS
            if (full or self._by_peer[host] > MAX_CONNECTIONS_PER_PEER) and not self._evict(
                None if full else host
            ):
                self.exhausted.warning(
                    "http:connections",
                    "status listener: refused a connection from %s (%d open, %d from it)",
                    host,
                    self._open,
                    self._by_peer[host],
                )
                await self._answer(writer, 503, b"too many connections\n", "text/plain")
            else:
                self._heads[writer] = host
                await self._request(reader, writer)
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away, or would not take the answer in time
        except Exception:
            self.exhausted.log(
                "http:failed", logging.ERROR, "status listener: a request failed", exc_info=True
            )
        finally:
            self._heads.pop(writer, None)
            self._open -= 1
            self._by_peer[host] -= 1
            if not self._by_peer[host]:
                del self._by_peer[host]
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    def _evict(self, host: str | None) -> bool:
        """Close the oldest connection waiting for its request head (of ``host``, when
        given); whether there was one."""
        for writer, of in self._heads.items():
            if host is None or of == host:
                del self._heads[writer]
                self.exhausted.warning(
                    "http:evicted",
                    "status listener: closed a connection from %s that had sent no request "
                    "yet, to make room (%d open)",
                    of,
                    self._open,
                )
                writer.close()
                return True
        return False

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
        except TimeoutError:
            await self._answer(writer, 408, b"request head not received in time\n", "text/plain")
            return
        except asyncio.LimitOverrunError:
            await self._answer(writer, 431, b"request head too large\n", "text/plain")
            return
        except asyncio.IncompleteReadError:
            return  # closed before a whole head
        finally:
            self._heads.pop(writer, None)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
            await self._answer(writer, 400, b"not an HTTP/1.x request\n", "text/plain")
            return
        method, target, _ = parts
        if method not in ("GET", "HEAD"):
            await self._answer(writer, 405, b"only GET and HEAD\n", "text/plain")
            return
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        peer = writer.get_extra_info("peername")
        if self._loopback_only is not None and not (
            isinstance(peer, tuple) and is_loopback_host(str(peer[0]))
        ):
            body = f"{self._loopback_only}\n".encode()
            await self._answer(writer, 401, body, "text/plain", head_only=method == "HEAD")
            return
        url = urllib.parse.urlsplit(target)
        code, body, ctype = await self._route(url.path, url.query, headers.get("authorization"))
        await self._answer(writer, code, body, ctype, head_only=method == "HEAD")

    async def _route(self, path: str, query: str, auth: str | None) -> tuple[int, bytes, str]:
        if path in ("/", "/index.html"):  # static: no state in it, no token needed
            return 200, self._page, "text/html; charset=utf-8"
        if path not in ("/status", "/metrics"):
            return 404, b"not found: try /, /status or /metrics\n", "text/plain"
        if self._tokens is not None and self._tokens.match(auth) is None:
            return 401, b"bearer token required\n", "text/plain"
        loop = asyncio.get_running_loop()
        if path == "/metrics":
            text = await loop.run_in_executor(self._pool, self.engine.metrics_text)
            return 200, text.encode(), PROMETHEUS_TYPE
        since = _history_since(query)
        body = await loop.run_in_executor(self._pool, self._status_json, since)
        return 200, body, "application/json"

    def _status_json(self, since: float | None) -> bytes:
        out: dict[str, Any] = self.engine.status().to_json()
        if since is not None:
            out["history"] = {
                "interval_s": self.history.interval,
                "samples": self.history.since(since),
            }
        return json.dumps(out, indent=1).encode()

    async def _answer(
        self,
        writer: asyncio.StreamWriter,
        code: int,
        body: bytes,
        ctype: str,
        head_only: bool = False,
    ) -> None:
        head = (
            f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\n"
            f"Content-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\n"
            "X-Content-Type-Options: nosniff\r\n"
            # the status page is one self-contained document: its own inline script
            # and style, data from this origin only, never framed by another page
            f"Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\n"
            "X-Frame-Options: DENY\r\n"
            "Connection: close\r\n"
        )
        if code == 401:
            head += 'WWW-Authenticate: Bearer realm="cuzk"\r\n'
        writer.write(head.encode() + b"\r\n" + (b"" if head_only else body))
        await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)


def _history_since(query: str) -> float | None:
    """``history_since=T`` of a /status query: samples after T (0: the whole hour)."""
    values = urllib.parse.parse_qs(query).get("history_since")
    if not values:
        return None
    try:
        return float(values[0])
    except ValueError:
        return 0.0
