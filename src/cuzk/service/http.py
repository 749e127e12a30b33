"""HTTP ``/metrics`` (Prometheus text) and ``/status`` (JSON) on ``[daemon] status_listen``.

When the daemon has a bearer token, these need it too (``Authorization:
Bearer <token>``; Prometheus's ``authorization.credentials_file`` sends it).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cuzk.engine.engine import Engine

log = logging.getLogger(__name__)

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class StatusServer:
    def __init__(self, engine: Engine, hostport: str, token: str | None = None) -> None:
        host, _, port = hostport.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        handler = _handler(engine, token)
        self.httpd = ThreadingHTTPServer((host, int(port)), handler)
        self.httpd.daemon_threads = True
        self.address = f"{host}:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="http-status", daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        log.info("HTTP /metrics and /status on http://%s", self.address)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(engine: Engine, token: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            log.debug("http: " + format, *args)

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if token is not None:
                sent = self.headers.get("Authorization", "")
                scheme, _, value = sent.partition(" ")
                if scheme.lower() != "bearer" or not hmac.compare_digest(
                    value.strip().encode(), token.encode()
                ):
                    self._send(401, b"bearer token required\n", "text/plain")
                    return
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, engine.metrics_text().encode(), PROMETHEUS_TYPE)
            elif path == "/status":
                body = json.dumps(engine.status().to_json(), indent=1).encode()
                self._send(200, body, "application/json")
            else:
                self._send(404, b"not found: try /metrics or /status\n", "text/plain")

    return Handler
