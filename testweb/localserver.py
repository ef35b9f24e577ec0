"""A small loopback HTTP server in a thread, for tests that need a special web.

:class:`LocalServer` runs ``http.server.ThreadingHTTPServer`` (HTTP/1.1,
keep-alive, ``Content-Length`` on every answer) on a free port of a loopback
address and answers every GET with what the test's ``respond`` function
returns for the :class:`Request`. It records every request as a :class:`Hit`
(arrival time, host, path as sent), so a test compares a crawl's output with
the server's own ledger. The host is the ``Host`` header's name (or the host
of an absolute-form request target, as a proxy would get it); many virtual
hosts share one port through a hosts file (``DNS_HOSTS``).

:class:`LocalWeb` is the ready-made small site of the resolver, WARC and
progress tests. The synthetic web of the end-to-end tests is bigger and runs
in its own process (:mod:`testweb.launch`).
"""

from __future__ import annotations

import gzip
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HTML = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Request:
    """What the server passes to ``respond``: ``path`` is the target as sent."""

    method: str
    host: str
    path: str
    headers: Message


@dataclass(frozen=True)
class Reply:
    """What ``respond`` returns."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": HTML})


@dataclass(frozen=True)
class Hit:
    """One request received: ``time.monotonic()`` at arrival, host, path as sent."""

    time: float
    host: str
    path: str


Responder = Callable[[Request], Reply]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        host, path = self._target()
        owner = self.server.owner
        owner.record(Hit(time.monotonic(), host, path))
        reply = owner.respond(Request(self.command, host, path, self.headers))
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _target(self) -> tuple[str, str]:
        """(host without port, lower-case; path and query as sent: from the
        request line, since ``self.path`` has a leading ``//`` cut to ``/``)."""
        words = self.requestline.split(" ")
        target = words[1] if len(words) == 3 else self.path
        if target.startswith(("http://", "https://")):  # absolute form (a proxy request)
            parts = urlsplit(target)
            start = target.find("/", len(parts.scheme) + 3)
            return (parts.hostname or ""), (target[start:] if start >= 0 else "/")
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        return host, target


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer


class LocalServer:
    """A running server; a context manager that stops it on exit.

    ``respond`` is called in the request's own thread, so a slow or held
    answer never holds up the others.
    """

    def __init__(self, respond: Responder, address: str = "127.0.0.1") -> None:
        self.respond = respond
        self.address = address
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._server = _Server((address, 0), _Handler)
        self._server.owner = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"http://{host or self.address}:{self.port}{path}"

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    @property
    def served(self) -> Counter[str]:
        """Requests per path, query left out."""
        with self._lock:
            return Counter(hit.path.split("?", 1)[0] for hit in self.hits)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def page_body(number: int, pages: int) -> bytes:
    """Page ``number`` links to the next two pages, so the crawl reaches all."""
    links = "".join(f'<a href="/page/{n}">p{n}</a>' for n in (number + 1, number + 2) if n < pages)
    filler = f"<p>page {number} " + "lorem ipsum " * 40 + "</p>"
    return f"<html><body><h1>{number}</h1>{links}{filler}</body></html>".encode()


GZIP_TEXT = b"<html><body>" + b"compressed page " * 200 + b"</body></html>"
NOT_FOUND = Reply(404, b"not found", {"Content-Type": "text/plain"})


class LocalWeb(LocalServer):
    """``/page/0`` .. ``/page/{pages-1}``, ``/gzip``, ``/error``; 404 elsewhere.

    ``/to-hold`` links to ``/hold``, which sets ``held`` and answers only
    after ``release`` is set (at the latest when the server stops): a test
    knows the crawl got that far. ``delay`` makes every answer slow.
    """

    def __init__(self, pages: int = 10, delay: float = 0.0) -> None:
        self.pages, self.delay = pages, delay
        self.held, self.release = threading.Event(), threading.Event()
        super().__init__(self.answer)

    def answer(self, request: Request) -> Reply:
        path = request.path.split("?", 1)[0]
        if path == "/hold":
            self.held.set()
            self.release.wait(timeout=60)
        if self.delay:
            time.sleep(self.delay)  # the server is slow; it synchronises nothing
        if path.startswith("/page/") and path[6:].isdigit() and int(path[6:]) < self.pages:
            return Reply(200, page_body(int(path[6:]), self.pages))
        if path == "/gzip":
            return Reply(200, self.gzip_body(), {"Content-Type": HTML, "Content-Encoding": "gzip"})
        if path == "/to-hold":
            return Reply(200, b'<html><a href="/hold">hold</a></html>')
        if path == "/error":
            return Reply(500, b"<html>server error</html>")
        return NOT_FOUND

    @staticmethod
    def gzip_body() -> bytes:
        # mtime fixed so every request serves the same bytes
        return gzip.compress(GZIP_TEXT, mtime=0)

    def stop(self) -> None:
        self.release.set()
        super().stop()
