"""A continuous crawl fetches a changed page again within its interval, even
while the page's host has a long backlog of new URLs.

One loopback host: an index linking ten articles, then a thousand dead links
(each a 404: a fetch slot and a politeness gap, and never due again, so the
re-visits stay within what the crawl can fetch). ``scrapy crawl web`` runs
with ``REVISIT_ENABLED``, intervals of 5 to 10 seconds and
``DOWNLOAD_DELAY`` 0.1, so the host serves at most about a hundred requests
in one interval and the dead links take about a hundred seconds. Once every
article was fetched, all ten change. Each must be fetched again (a 200 of
its new version) before the host has served :data:`BUDGET` more requests:
within its interval, not after the backlog. The verdict comes from the
server's own ledger, counted in requests, not in seconds.
"""

from __future__ import annotations

import hashlib
import signal
import threading
from pathlib import Path

from testweb.crawlrun import kill_crawl, start_web_crawl
from testweb.localserver import LocalServer, Reply, Request
from testweb.waiting import CrawlActivity, ended, wait_until

HOST = "news.test"
ARTICLES = [f"/article/{i}.html" for i in range(10)]
DEAD = [f"/gone/{i}.html" for i in range(1000)]
#: requests the host may serve after the change before every article was
#: fetched again: 3 x an interval's worth (10 s at 0.1 s), a third of the backlog
BUDGET = 300


class ChangingSite:
    """The host's pages, versioned: ``change()`` gives every article a new
    version (new text, new ETag). ``served`` is the ledger of what was
    answered: (path, status, version), in order."""

    def __init__(self) -> None:
        self.version = 1
        self.served: list[tuple[str, int, int]] = []
        self.lock = threading.Lock()

    def change(self) -> int:
        """New versions from now on; the ledger's length at the change."""
        with self.lock:
            self.version += 1
            return len(self.served)

    def answer(self, request: Request) -> Reply:
        with self.lock:
            reply = self._reply(request)
            self.served.append((request.path, reply.status, self.version))
            return reply

    def _reply(self, request: Request) -> Reply:
        if request.path == "/robots.txt":
            return Reply(200, b"User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"})
        if request.path == "/":
            links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in ARTICLES + DEAD)
            return Reply(200, f"<html><body><h1>News</h1><ul>{links}</ul></body></html>".encode())
        if request.path in ARTICLES:
            body = (f"<html><body><h1>{request.path}</h1><p>Version {self.version} of this article: "
                    f"{'news ' * 40}</p><a href=\"/\">index</a></body></html>").encode()
            etag = f'"{hashlib.sha1(body).hexdigest()}"'
            if request.headers.get("If-None-Match") == etag:
                return Reply(304, b"", {"ETag": etag})
            return Reply(200, body, {"Content-Type": "text/html; charset=utf-8", "ETag": etag})
        return Reply(404, b"<html><body>gone</body></html>")


def refetched_within(served: list[tuple[str, int, int]], mark: int) -> dict[str, int | None]:
    """Per article, how many requests after ``mark`` its new version was
    first served (None: not yet)."""
    after = served[mark:]
    return {path: next((n for n, (p, status, version) in enumerate(after, 1)
                        if p == path and status == 200 and version > 1), None) for path in ARTICLES}


def test_changed_pages_come_back_within_their_interval_despite_the_hosts_backlog(tmp_path: Path) -> None:
    site = ChangingSite()
    with LocalServer(site.answer) as server:
        hosts = tmp_path / "hosts"
        hosts.write_text(f"127.0.0.1 {HOST}\n")
        settings = {
            "DNS_HOSTS": hosts, "ALLOW_PRIVATE_ADDRESSES": True, "JOBDIR": tmp_path / "job",
            "REVISIT_ENABLED": True, "REVISIT_INITIAL_INTERVAL": 5, "REVISIT_MIN_INTERVAL": 5,
            "REVISIT_MAX_INTERVAL": 10, "DOWNLOAD_DELAY": 0.1, "LINKS_PATH_ASCENDING": False,
        }
        run = tmp_path / "run"
        proc = start_web_crawl(run, server.url("/", HOST), settings)
        progress = CrawlActivity([run], also=lambda: len(site.served))
        try:
            wait_until(lambda: ended([proc]) or {p for p, status, _ in site.served if status == 200} >= set(ARTICLES),
                       "every article fetched", progress)
            assert proc.poll() is None, "the continuous crawl ended"
            mark = site.change()
            wait_until(lambda: ended([proc]) or len(site.served) > mark + BUDGET
                       or None not in refetched_within(site.served, mark).values(),
                       "every article fetched again", progress)
            assert proc.poll() is None, "the continuous crawl ended"
            proc.send_signal(signal.SIGINT)  # Ctrl-C: a pause
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                kill_crawl(proc)
    within = refetched_within(site.served, mark)
    assert all(n is not None and n <= BUDGET for n in within.values()), within
    # they came back while the host's backlog was still there (the case this is about)
    last = mark + max(within.values())
    assert sum(1 for path, _, _ in site.served[:last] if path in DEAD) < len(DEAD)
