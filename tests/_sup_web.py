"""A small real web for the resolver, WARC and progress tests.

:class:`LocalWeb` runs ``http.server.ThreadingHTTPServer`` on a free
loopback port in a thread and counts what it served, so tests compare a
crawl's output with the server's own ledger. :func:`run_spider` runs
``scrapy runspider tests/_sup_spiders.py`` in a subprocess from a temporary
directory (so the lead's project settings do not apply) with
``PYTHONPATH`` pointing at the repository.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
SPIDERS = str(Path(__file__).with_name("_sup_spiders.py"))


def page_body(number: int, pages: int) -> bytes:
    """Page ``number`` links to the next two pages, so the crawl reaches all."""
    links = "".join(f'<a href="/page/{n}">p{n}</a>' for n in (number + 1, number + 2) if n < pages)
    filler = f"<p>page {number} " + "lorem ipsum " * 40 + "</p>"
    return f"<html><body><h1>{number}</h1>{links}{filler}</body></html>".encode()


GZIP_TEXT = b"<html><body>" + b"compressed page " * 200 + b"</body></html>"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        web = self.server.web
        path = self.path.split("?", 1)[0]
        web.record(path)
        if path == "/hold":  # answered only once the test releases it
            web.held.set()
            web.release.wait(timeout=60)
        if web.delay:
            time.sleep(web.delay)  # the server is slow; it synchronises nothing
        status, headers, body = web.respond(path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    web: LocalWeb


@dataclass
class LocalWeb:
    """``/page/0`` .. ``/page/{pages-1}``, ``/gzip``, ``/error``; 404 elsewhere.

    ``/to-hold`` links to ``/hold``, which sets ``held`` and answers only
    after ``release`` is set: a test knows the crawl got that far.
    """

    pages: int = 10
    delay: float = 0.0

    def __post_init__(self) -> None:
        self.served: Counter[str] = Counter()
        self.held, self.release = threading.Event(), threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.web = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LocalWeb:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def record(self, path: str) -> None:
        with self._lock:
            self.served[path] += 1

    def respond(self, path: str) -> tuple[int, dict[str, str], bytes]:
        html = {"Content-Type": "text/html; charset=utf-8"}
        if path.startswith("/page/") and path[6:].isdigit() and int(path[6:]) < self.pages:
            return 200, html, page_body(int(path[6:]), self.pages)
        if path == "/gzip":
            return 200, {**html, "Content-Encoding": "gzip"}, self.gzip_body()
        if path == "/to-hold":
            return 200, html, b'<html><a href="/hold">hold</a></html>'
        if path == "/error":
            return 500, html, b"<html>server error</html>"
        return 404, {"Content-Type": "text/plain"}, b"not found"

    @staticmethod
    def gzip_body() -> bytes:
        # mtime fixed so every request serves the same bytes
        return gzip.compress(GZIP_TEXT, mtime=0)


@dataclass
class SpiderRun:
    returncode: int
    log: str

    def stat(self, key: str) -> Any:
        """A value from Scrapy's final "Dumping Scrapy stats" block, or None."""
        match = re.search(r"'%s': ([^,}\n]+)" % re.escape(key), self.log)
        return None if match is None else ast.literal_eval(match.group(1))


def spider_command(start_urls: list[str], settings: dict[str, Any]) -> list[str]:
    """The ``scrapy runspider`` command line, dict and list settings as JSON."""
    command = [SCRAPY, "runspider", SPIDERS, "-a", "start=" + " ".join(start_urls)]
    for name, value in {"LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False, **settings}.items():
        text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        command += ["-s", f"{name}={text}"]
    return command


def spider_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run_spider(workdir: Path, start_urls: list[str], settings: dict[str, Any],
               timeout: float = 120.0, preexec_fn: Any = None) -> SpiderRun:
    """``scrapy runspider`` the follow spider with ``-s`` settings (dicts as JSON)."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(spider_command(start_urls, settings), cwd=workdir, env=spider_env(),
                          timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          preexec_fn=preexec_fn)
    log = proc.stdout.decode(errors="replace")
    (workdir / "crawl.log").write_text(log)
    return SpiderRun(proc.returncode, log)
