"""Many virtual hosts on one loopback port, each with its own robots.txt.

Run as a subprocess by the robots.txt conformance test::

    python -m tests.robots_hosts SITES_JSON ACCESS_LOG

``SITES_JSON`` maps a host name (``c12.test``) to its robots.txt text. The
server picks the site by the ``Host`` header (or the host of an absolute-form
request target), answers ``/robots.txt`` with the site's file as UTF-8
``text/plain`` and any other path with a small HTML page without links, and
appends one JSON line ``{"host", "path"}`` per request to ``ACCESS_LOG``,
``path`` being the request target exactly as it came on the wire. An unknown
host gets 404. The first line on stdout is ``PORT <n>``.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

PAGE = b"<html><head><title>case</title></head><body><p>A page without links.</p></body></html>"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        host, path = self._target()
        self.server.record(host, path)
        robots = self.server.sites.get(host)
        if robots is None:
            self._send(404, "text/plain", b"no such host")
        elif path == "/robots.txt":
            self._send(200, "text/plain; charset=utf-8", robots.encode("utf-8"))
        else:
            self._send(200, "text/html; charset=utf-8", PAGE)

    def _target(self) -> tuple[str, str]:
        """(host without port, path and query as sent)."""
        target = self.path
        if target.startswith(("http://", "https://")):  # absolute form (a proxy request)
            parts = urlsplit(target)
            return (parts.hostname or ""), target[target.index("/", len(parts.scheme) + 3):]
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        return host, target

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sites: dict[str, str], log_path: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.sites = sites
        self._log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed at exit
        self._lock = threading.Lock()

    def record(self, host: str, path: str) -> None:
        with self._lock:
            self._log.write(json.dumps({"host": host, "path": path}) + "\n")
            self._log.flush()


def read_access_log(path: str) -> list[tuple[str, str]]:
    """The (host, path) pairs the server logged, in order."""
    with open(path, encoding="utf-8") as handle:
        return [(entry["host"], entry["path"]) for entry in map(json.loads, handle) if entry]


def main(argv: list[str]) -> None:
    sites_path, log_path = argv
    with open(sites_path, encoding="utf-8") as handle:
        sites = json.load(handle)
    server = _Server(sites, log_path)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
