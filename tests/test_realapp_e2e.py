"""The crawler on a real dynamic web application, with default settings.

nginx serves Debian's cgit through FastCGI over git repositories made at
start, beside sphinx-doc's static site (:mod:`testweb.realapp`). cgit's URL
space never ends for a crawler: every file at every commit and branch, every
commit's diff and patch, logs at every offset, mostly near-copies. One
``scrapy crawl web`` with every default except what loopback needs
(``DNS_HOSTS``) and two outputs (``JOBDIR``; ``WARC_DIR``: the bodies the
crawler got, for the checks below), seeded with both roots and the two host
names as ``allowed_domains``, on the embedded store and on Redis, is judged
from nginx's access log, the WARC records and the items:

* the crawl ends by itself, exit 0, the application's origin deferred as
  ``low-yield`` in the final report and in ``scrapy crawlstatus``; a crawl
  that never ends is interrupted once it has sent :data:`MAX_APP_REQUESTS`
  requests to the application (a count, not a clock: the bound exists so
  that the failure ends);
* at least :data:`NEW_TEXT_SHARE` of its requests to the application bring
  text not seen before: the request's page is a 2xx document the crawler's
  content-seen test found neither an exact nor a near-duplicate of a page
  fetched earlier (the product's own notion of new text; the real-web test
  checks the near-duplicate flags against shingle resemblance computed
  from the files, and here no page counted new has the visible text of an
  earlier response, from the WARC bodies); a redirect or an error page
  brings none;
* no request goes to a URL that no seed, fetched page or redirect gave
  before it (black box: links extracted from the WARC bodies by
  :func:`tests.realweb_truth.html_links`, ``Location`` headers, the seeds;
  URLs compared after w3lib's canonicalisation, which sorts query
  arguments); cgit's commit pages repeat ``id=<commit>`` in their links, so
  a session-id heuristic that rewrote it would fail here;
* robots.txt is obeyed (nothing it disallows is fetched, nothing before the
  origin's robots.txt) and the application's ``Crawl-delay`` is kept;
* every page of the static site reachable from its root and allowed by its
  robots.txt is fetched (ground truth from the files,
  :func:`tests.realweb_truth.reachable_pages`).
"""

from __future__ import annotations

import glob
import signal
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

import pytest
from protego import Protego
from w3lib.url import canonicalize_url
from warcio.archiveiterator import ArchiveIterator

from extensions.contentseen.text import visible_text
from testweb.crawlrun import ROOT, SCRAPY, CrawlResult, read_result, start_web_crawl
from testweb.realapp import APP_CRAWL_DELAY, APP_HOST, APP_ROBOTS, RealApp, start_realapp
from testweb.realweb import LogEntry, MissingTool
from testweb.redisserver import RedisServer
from testweb.waiting import CrawlActivity, NoProgress, wait_until
from tests.realweb_truth import PRODUCT_TOKEN, Truth, html_links, reachable_pages

#: polls (0.1 s apart) without progress before a stalled crawl is interrupted
STALL_POLLS = 1000
#: requests to the application after which a crawl that has not ended is
#: interrupted (an ending crawl sends far fewer: see the README's figures)
MAX_APP_REQUESTS = 4000
INTERRUPT_GRACE = 60.0
NEW_TEXT_SHARE = 0.6
#: nginx logs times in milliseconds, from a clock it updates once per event-loop turn
CLOCK_TOLERANCE = 0.01
LOW_YIELD = "low-yield"


@dataclass(frozen=True)
class Response:
    """One response record of the crawl's WARC files."""

    url: str
    status: int
    location: str | None
    content_type: str
    body: bytes


@dataclass
class AppCrawl:
    app: RealApp = field(repr=False)
    result: CrawlResult = field(repr=False)
    entries: list[LogEntry] = field(repr=False)  # the crawler's requests, in log order
    responses: dict[str, Response] = field(repr=False)  # by canonical URL, the first
    ended_by_itself: bool
    store: dict[str, str] = field(default_factory=dict)  # the store's settings (none: the embedded one)

    def url(self, entry: LogEntry) -> str:
        return f"{entry.scheme}://{entry.host}:{entry.port}{entry.uri}"

    def app_pages(self) -> list[LogEntry]:
        """The requests to the application, robots.txt left out, in start order."""
        return sorted((e for e in self.entries if e.host == APP_HOST and e.path != "/robots.txt"),
                      key=lambda e: e.start)

    def summary(self) -> str:
        stats = self.result.stats
        keys = sorted(k for k in stats if k.startswith(("hostyield/", "frontier/deferred", "finish_reason")))
        return (f"ended by itself: {self.ended_by_itself} (exit {self.result.returncode}); "
                f"{len(self.app_pages())} requests to the application, {len(self.entries)} in all\n"
                + "\n".join(f"  {key}: {stats[key]}" for key in keys))


@pytest.fixture(scope="module")
def realapp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealApp]:
    try:
        with start_realapp(tmp_path_factory.mktemp("realapp")) as app:
            yield app
    except MissingTool as err:
        pytest.fail(str(err), pytrace=False)


def run_until_end(workdir: Path, app: RealApp, store: dict[str, str]) -> tuple[CrawlResult, bool]:
    """Run the crawl to its end; interrupt it (SIGINT: Scrapy closes
    gracefully) once it stalled for :data:`STALL_POLLS` polls or sent
    :data:`MAX_APP_REQUESTS` requests to the application."""
    proc = start_web_crawl(
        workdir, ",".join(app.seeds()),
        settings={"DNS_HOSTS": app.hosts_file, "JOBDIR": workdir / "job", "WARC_DIR": workdir / "warc", **store},
        spider_args={"allowed_domains": ",".join(app.hosts)}, robots_overrides=False)

    def app_requests() -> int:
        return app.access_log.read_text().count(f'"host":"{APP_HOST}"') if app.access_log.exists() else 0

    activity = CrawlActivity([workdir], also=lambda: app.access_log.stat().st_size if app.access_log.exists() else 0)
    try:
        wait_until(lambda: proc.poll() is not None or app_requests() > MAX_APP_REQUESTS, "end of the crawl",
                   activity, patience=STALL_POLLS, interval=0.1)
    except NoProgress:
        pass
    ended = proc.poll() is not None
    if not ended:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=INTERRUPT_GRACE)
    return read_result(workdir, proc.returncode, []), ended


def warc_responses(directory: Path) -> dict[str, Response]:
    """Every response record of the WARC files in ``directory``, by canonical URL (the first kept)."""
    responses: dict[str, Response] = {}
    for path in sorted(glob.glob(str(directory / "*.warc.gz"))):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type != "response":
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                headers = record.http_headers
                responses.setdefault(canonicalize_url(url), Response(
                    url, int(headers.get_statuscode()), headers.get_header("Location"),
                    headers.get_header("Content-Type") or "", record.content_stream().read()))
    return responses


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def crawl(request: pytest.FixtureRequest, realapp: RealApp,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppCrawl]:
    """The crawl on the embedded store, and on Redis (a redis-server of its own)."""
    before = len(realapp.entries())
    workdir = tmp_path_factory.mktemp(f"realapp-crawl-{request.param}")
    with ExitStack() as stack:
        store = {}
        if request.param == "redis":
            server = stack.enter_context(RedisServer(workdir / "redis"))
            store = {"FRONTIER_BACKEND": "redis", "REDIS_URL": server.url, "FRONTIER_REDIS_PREFIX": "realapp",
                     "SCHEDULER_PERSIST": "True"}  # kept at the end, for crawlstatus
        result, ended = run_until_end(workdir, realapp, store)
        entries = [e for e in realapp.entries()[before:] if e.user_agent.startswith(PRODUCT_TOKEN)]
        yield AppCrawl(realapp, result, entries, warc_responses(workdir / "warc"), ended, store)


@pytest.fixture(scope="module")
def truth(realapp: RealApp) -> Truth:
    return reachable_pages(realapp.static_web, "http")


def test_the_crawl_ends_by_itself_stopping_the_application_for_low_yield(crawl: AppCrawl) -> None:
    result = crawl.result
    assert crawl.ended_by_itself and result.returncode == 0, crawl.summary() + "\n" + result.log[-1500:]
    origin = crawl.app.origin(APP_HOST)
    assert result.report["deferred"].get(origin) == LOW_YIELD, result.report["deferred"]
    assert result.stats["hostyield/stopped_hosts"] == 1, crawl.summary()
    settings = {"JOBDIR": result.workdir / "job", **crawl.store}
    status = subprocess.run([SCRAPY, "crawlstatus", *(f"-s{name}={value}" for name, value in settings.items())],
                            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert status.returncode == 0, status.stderr
    assert f"{origin} since" in status.stdout and LOW_YIELD in status.stdout, status.stdout


def test_most_requests_to_the_application_bring_text_not_seen_before(crawl: AppCrawl) -> None:
    new_urls = {canonicalize_url(item["url"]) for item in crawl.result.items
                if 200 <= int(item.get("status") or 0) < 300 and item.get("fingerprint")
                and not item.get("duplicate_of") and not item.get("near_duplicate_of")}
    pages = crawl.app_pages()
    new = [e for e in pages if canonicalize_url(crawl.url(e)) in new_urls]
    assert len(pages) > 200, crawl.summary()  # the application was crawled at all
    assert len(new) >= NEW_TEXT_SHARE * len(pages), (
        f"{len(new)} of {len(pages)} requests to the application brought new text\n" + crawl.summary())
    # independently of the crawler's fingerprints: no page counted new has
    # the visible text of a response the crawler got before it
    texts: dict[str, str] = {}
    copies = []
    for entry in sorted(crawl.entries, key=lambda e: e.end):
        response = crawl.responses.get(canonicalize_url(crawl.url(entry)))
        if response is None or response.status != 200 or "html" not in response.content_type:
            continue
        text = visible_text(response.body)
        earlier = texts.setdefault(text, response.url)
        if earlier != response.url and canonicalize_url(response.url) in new_urls:
            copies.append(f"{response.url} = {earlier}")
    assert not copies, "\n".join(copies[:20])


def test_no_request_goes_to_a_url_no_seed_page_or_redirect_gave(crawl: AppCrawl) -> None:
    given: dict[str, float] = {canonicalize_url(seed): 0.0 for seed in crawl.app.seeds()}

    def give(url: str, at: float) -> None:
        key = canonicalize_url(url)
        if given.get(key, float("inf")) > at:
            given[key] = at

    for entry in sorted(crawl.entries, key=lambda e: e.end):
        response = crawl.responses.get(canonicalize_url(crawl.url(entry)))
        if response is None:
            continue
        if response.location:
            give(urljoin(response.url, response.location), entry.end)
        if "html" in response.content_type:
            for link in html_links(response.body, response.url):
                give(link, entry.end)
    invented = [e for e in crawl.entries if e.path != "/robots.txt"
                and given.get(canonicalize_url(crawl.url(e)), float("inf")) > e.start + CLOCK_TOLERANCE]
    with_ids = [e for e in crawl.app_pages() if "id=" in e.uri]
    assert len(with_ids) > 100, crawl.summary()  # commit views: their links repeat id=<commit>
    assert not invented, f"{len(invented)} requests to URLs nothing gave:\n" + "\n".join(
        crawl.url(e) for e in invented[:20])


def test_robots_txt_and_the_applications_crawl_delay_are_kept(crawl: AppCrawl) -> None:
    robots = {APP_HOST: Protego.parse(APP_ROBOTS),
              crawl.app.static_site.host: Protego.parse(crawl.app.static_site.robots)}
    violations = [e for e in crawl.entries if e.path != "/robots.txt"
                  and not robots[e.host].can_fetch(crawl.url(e), PRODUCT_TOKEN)]
    assert not violations, "\n".join(crawl.url(e) for e in violations[:20])
    robots_done: dict[str, float] = {}
    early = []
    for entry in sorted(crawl.entries, key=lambda e: e.start):
        if entry.path == "/robots.txt":
            robots_done.setdefault(entry.host, entry.end)
        elif entry.host not in robots_done or entry.start < robots_done[entry.host] - CLOCK_TOLERANCE:
            early.append(crawl.url(entry))
    assert not early, "\n".join(early[:20])
    # robots.txt had something to refuse: pages link to snapshots, blame and statistics
    disallowed = {link for response in crawl.responses.values() if APP_HOST in response.url
                  and "html" in response.content_type for link in html_links(response.body, response.url)
                  if not robots[APP_HOST].can_fetch(link, PRODUCT_TOKEN)}
    assert len(disallowed) > 10
    requests = [e for e in crawl.entries if e.host == APP_HOST]
    short = [(later.start - earlier.end, earlier, later) for earlier, later in zip(
        sorted(requests, key=lambda e: e.start), sorted(requests, key=lambda e: e.start)[1:])
        if later.start - earlier.end < APP_CRAWL_DELAY - CLOCK_TOLERANCE]
    assert not short, "\n".join(f"{gap:.3f} s between {a.uri} and {b.uri}" for gap, a, b in short[:20])


def test_every_reachable_page_of_the_static_site_is_fetched(crawl: AppCrawl, truth: Truth) -> None:
    host = crawl.app.static_site.host
    fetched = {canonicalize_url(crawl.url(e)) for e in crawl.entries if e.host == host and e.status == 200}
    missing = [url for url, _ in truth.pages.values() if canonicalize_url(url) not in fetched]
    assert len(truth.pages) > 100  # the ground truth itself is sane
    assert not missing, f"{len(missing)} of {len(truth.pages)} pages not fetched:\n" + "\n".join(missing[:20])
