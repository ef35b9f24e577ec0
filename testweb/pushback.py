"""A small web whose hosts push back: 429 and 503, with and without ``Retry-After``.

:class:`PushbackWeb` is a :class:`~testweb.localserver.LocalServer` (a
thread, one loopback port, virtual hosts by the ``Host`` header; its
:attr:`~PushbackWeb.hosts_file` maps the names to 127.0.0.1 for
``DNS_HOSTS``). Every host serves ``/`` and ``/page/1`` ..
``/page/{pages-1}``, each page linking the next two, so a crawl from ``/``
reaches them all; ``/robots.txt`` is 404 (no rules).

A host with a :class:`Rule` pushes back: the first requests for each of
the rule's paths (as many as it says) get the rule's status with its
``Retry-After``: the rule's text as it is (``"3"``: delta-seconds),
:data:`DATE` (an HTTP-date ``seconds`` after the answer), or none.

The log (:attr:`PushbackWeb.visits`) holds every request in arrival order as
a :class:`Visit`: wall-clock start (the request read) and end (just before
the answer is written, so a gap read off the log is never longer than the
one the crawler kept), host, path, status and the ``Retry-After`` sent.
"""

from __future__ import annotations

import email.utils
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from testweb.localserver import NOT_FOUND, LocalServer, Reply, Request, page_body

DATE = "date"  # a Rule's retry_after: an HTTP-date


@dataclass(frozen=True)
class Rule:
    """How a host pushes back: the first ``paths[path]`` requests for each path get ``status``."""

    status: int = 429
    retry_after: str | None = None  # "3", DATE (``seconds`` from the answer) or None
    paths: tuple[tuple[str, int], ...] = (("/", 1),)
    seconds: float = 3.0  # for DATE


@dataclass(frozen=True)
class Visit:
    """One request as the server saw it (times from ``time.time()``)."""

    start: float
    end: float
    host: str
    path: str
    status: int
    retry_after: str | None = None

    @property
    def pushed_back(self) -> bool:
        return self.status in (429, 503)


class PushbackWeb(LocalServer):
    """The server; ``rules`` names the hosts that push back, ``calm`` those
    that never do; a host in ``slow`` takes that many seconds per answer."""

    def __init__(self, rules: dict[str, Rule], calm: list[str], pages: int = 10,
                 slow: dict[str, float] | None = None) -> None:
        self.rules, self.pages, self.slow = dict(rules), pages, dict(slow or {})
        self.names = [*rules, *calm]
        self.visits: list[Visit] = []
        self.answered: dict[tuple[str, str], int] = {}  # (host, path) -> requests answered
        self.lock = threading.Lock()
        super().__init__(self.answer)

    def write_hosts_file(self, path: Path) -> Path:
        """A hosts(5) file naming every host on 127.0.0.1, for ``DNS_HOSTS``."""
        path.write_text("".join(f"127.0.0.1\t{name}\n" for name in self.names))
        return path

    def seeds(self) -> list[str]:
        return [self.url("/", host) for host in self.names]

    def answer(self, request: Request) -> Reply:
        start = time.time()
        if request.host in self.slow:
            time.sleep(self.slow[request.host])  # a slow host: it synchronises nothing
        reply = self.reply(request)
        retry_after = reply.headers.get("Retry-After")
        with self.lock:
            self.visits.append(Visit(start, time.time(), request.host, request.path, reply.status, retry_after))
        return reply

    def reply(self, request: Request) -> Reply:
        if request.path == "/robots.txt":
            return NOT_FOUND
        path, key = request.path.split("?", 1)[0], (request.host, request.path)
        with self.lock:
            count = self.answered[key] = self.answered.get(key, 0) + 1
        rule = self.rules.get(request.host)
        if rule is not None and count <= dict(rule.paths).get(path, 0):
            return self.push_back(rule)
        number = 0 if path == "/" else int(path[6:]) if path.startswith("/page/") and path[6:].isdigit() else -1
        if 0 <= number < self.pages:
            return Reply(200, page_body(number, self.pages))
        return NOT_FOUND

    @staticmethod
    def push_back(rule: Rule) -> Reply:
        headers = {"Content-Type": "text/plain"}
        if rule.retry_after == DATE:
            headers["Retry-After"] = email.utils.formatdate(time.time() + rule.seconds, usegmt=True)
        elif rule.retry_after is not None:
            headers["Retry-After"] = rule.retry_after
        return Reply(rule.status, b"slow down\n", headers)

    def log_of(self, host: str) -> list[Visit]:
        """``host``'s requests, robots.txt aside, in arrival order."""
        with self.lock:
            return [visit for visit in self.visits if visit.host == host and visit.path != "/robots.txt"]
