"""Recording the link graph (``LINKGRAPH_RECORD``, :mod:`extensions.frontier.linkrecord`).

Over every store and both host dispatches: ``Frontier.page_done`` records a
page's accepted outlinks by the fingerprints the admission files them under,
with AOPIC on and off, for a duplicate page too, and nothing with the setting
off; a redirect's ``Location`` is its one outlink. End to end (``scrapy crawl
web`` on the synthetic test web): the recorded graph equals the test web's
ground-truth links of every fetched page, after the crawl's canonicalisation
and URL filter, on SQLite and on Redis with two processes, and a crawl killed
with SIGKILL keeps the list of every page marked done. (The store contract
itself: ``tests/test_store_conformance.py``.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.page import PageVerdict
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.frontier.scheduler import Frontier
from tests.test_frontier_support import STORES, make_frontier, make_store


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def fp_of(url: str) -> int:
    return url_fingerprint(url)[0]


def fetched(frontier: Frontier, url: str) -> Request:
    """``url`` filed, handed out and fetched; the request."""
    assert frontier.enqueue_request(Request(url, meta={"is_start_request": True}))
    request = frontier.next_request()
    assert request is not None and request.url == url
    frontier.fetch_finished(request, duration=0.0)
    return request


LINKS = ["http://b.test/1", "http://c.test/x?a=1", "http://b.test/1", "http://a.test/"]


@pytest.mark.parametrize("aopic", [True, False], ids=["aopic", "no-aopic"])
def test_page_done_records_the_outlinks_by_their_admission_fingerprints(store: Any, aopic: bool) -> None:
    parts = {"ledger": AOPICLedger(store), "prioritizer": CashPrioritizer(8)} if aopic else {}
    frontier = make_frontier(store, Clock(), **parts)
    fetched(frontier, "http://a.test/")
    done = frontier.page_done(PageVerdict("http://a.test/", LINKS))
    expected = [fp_of("http://b.test/1"), fp_of("http://c.test/x?a=1"), fp_of("http://a.test/")]
    assert store.links.targets_of(fp_of("http://a.test/")) == expected  # in order, each once, self-link kept
    assert frontier.stats.get_value("linkgraph/pages") == 1
    assert frontier.stats.get_value("linkgraph/edges") == 3
    assert set(done.credit) == (set(LINKS) if aopic else set())  # AOPIC's step still credits them
    new = expected[:2]  # page_done filed each under its recorded id (a.test/ is done: not new)
    assert set(store.urls.get_many(new)) == set(new)


def test_a_refetch_replaces_the_list_and_a_page_without_links_gets_an_empty_one(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1", "http://b.test/2"]))
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/3"]))
    frontier.page_done(PageVerdict("http://a.test/image.png"))
    assert store.links.targets_of(fp_of("http://a.test/")) == [fp_of("http://b.test/3")]
    assert store.links.targets_of(fp_of("http://a.test/image.png")) == []
    assert store.links.sources() == 2


def test_a_duplicate_page_records_its_links_without_crediting_them(store: Any) -> None:
    frontier = make_frontier(store, Clock(), ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8))
    fetched(frontier, "http://mirror.test/")
    done = frontier.page_done(PageVerdict("http://mirror.test/", ["http://mirror.test/p"], follow=False,
                                          content_group=3, duplicate=True))
    assert done.credit == {} and frontier.ledger.cash_of(fp_of("http://mirror.test/p")) is None
    assert store.links.targets_of(fp_of("http://mirror.test/")) == [fp_of("http://mirror.test/p")]


def test_a_redirected_page_s_links_belong_to_its_final_url(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    frontier.page_done(PageVerdict("http://a.test/old", ["http://b.test/1"], final_url="http://a.test/new"))
    assert store.links.targets_of(fp_of("http://a.test/new")) == [fp_of("http://b.test/1")]
    assert store.links.targets_of(fp_of("http://a.test/old")) is None  # the redirect's own list comes at its fetch


def test_a_redirect_records_its_location_as_its_one_outlink(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    assert frontier.enqueue_request(Request("http://a.test/old"))
    request = frontier.next_request()
    redirect = Response(request.url, status=301, headers={"Location": "/New#x"}, request=request)
    frontier.response_received(redirect, request)
    ok = HtmlResponse(request.url, status=200, body=b"<a href=/y>", request=request)
    frontier.response_received(ok, request)  # not a redirect: recorded by page_done, not here
    assert store.links.targets_of(fp_of("http://a.test/old")) == [fp_of("http://a.test/New")]
    assert frontier.stats.get_value("linkgraph/redirects") == 1
    bad = Response(request.url, status=302, headers={"Location": "http://[bad"}, request=request)
    frontier.response_received(bad, request)  # no URL: counted, the list stays
    assert frontier.stats.get_value("linkgraph/bad_redirects") == 1
    assert store.links.targets_of(fp_of("http://a.test/old")) == [fp_of("http://a.test/New")]


def test_with_recording_off_nothing_is_recorded_and_aopic_still_credits(store: Any) -> None:
    frontier = make_frontier(store, Clock(), ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8),
                             linkgraph_record=False)
    request = fetched(frontier, "http://a.test/")
    done = frontier.page_done(PageVerdict("http://a.test/", LINKS))
    frontier.response_received(Response(request.url, status=301, headers={"Location": "/z"}, request=request),
                               request)
    assert set(done.credit) == set(LINKS)
    assert store.links.sources() == 0 and list(store.links.scan()) == []
    assert frontier.stats.get_value("linkgraph/pages") is None


# -- end to end: the recorded graph against the test web's ground truth ----------------
TRAPS_OFF = r"//trap\.test[:/]"  # the trap host's links refused by the URL filter (stateless)
WEB = {"hosts": 6, "pages": 8, "links": 4, "seed": 3, "slow_delay": 0.05, "big_page_mb": 0.2}
DEPTH = 4


def crawl_settings(web: Any, **more: Any) -> dict[str, Any]:
    """A crawl of the test web whose links the ground truth can give exactly:
    the trap host refused by the URL filter, so the trap filter (whose
    verdicts depend on the order of the crawl) has nothing to cut."""
    return {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": DEPTH, "URL_FILTER_DENY": TRAPS_OFF,
            "CONCURRENT_REQUESTS": 16, **more}


class TruthLinks:
    """The ground-truth outlinks of a fetched page, as the crawl keys them:
    the page's links in the test web's model (a redirect: its Location),
    canonicalised, stripped of session parameters and passed through the URL
    filter the crawl builds from the same settings, as fingerprints."""

    def __init__(self, web: Any, settings: dict[str, Any]) -> None:
        from scrapy.utils.test import get_crawler  # noqa: PLC0415

        from extensions import defaults  # noqa: PLC0415
        from extensions.urls.filters import UrlFilter  # noqa: PLC0415

        self.model = web.model
        self.filter = UrlFilter.from_crawler(get_crawler(settings_dict={
            "DEPTH_LIMIT": settings["DEPTH_LIMIT"], "URL_FILTER_DENY": [settings["URL_FILTER_DENY"]]}))
        self.strip = frozenset(name.lower() for name in defaults.LINKS_STRIP_PARAMS)

    def of(self, url: str, depth: int) -> list[int]:
        from urllib.parse import urljoin, urlsplit  # noqa: PLC0415

        from extensions.frontier.fingerprint import canonical_fingerprint  # noqa: PLC0415
        from extensions.urls.canonical import canonicalize, strip_params  # noqa: PLC0415
        from testweb.model import canonical_url  # noqa: PLC0415
        from testweb.truth import REDIRECT_STATUSES, page_links  # noqa: PLC0415

        parts = urlsplit(canonical_url(url))  # the test web's page for any spelling of its URL
        page = self.model.page(parts.hostname or "", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        if page.status in REDIRECT_STATUSES and page.location:
            return [fp_of(urljoin(url, page.location))]
        targets = []
        for link in page_links(page, url, follow_nofollow=False)[0]:
            try:
                canonical = canonicalize(link)
            except ValueError:
                continue
            if "?" in canonical or ";" in canonical:
                canonical = strip_params(canonical, self.strip)
            if self.filter.reason(canonical, depth + 1) is None:
                targets.append(canonical_fingerprint(canonical))
        return list(dict.fromkeys(targets))


def sqlite_graph(job: Any) -> tuple[dict[str, tuple[int, int]], dict[int, list[int]]]:
    """What a crawl's ``JOBDIR/frontier.sqlite3`` holds: URL -> (status, depth)
    of every row, and the recorded lists by source."""
    import sqlite3  # noqa: PLC0415

    from extensions.backends.sqlite.tables import unpack_targets  # noqa: PLC0415

    db = sqlite3.connect(f"file:{job / 'frontier.sqlite3'}?mode=ro", uri=True)
    try:
        rows = {url: (status, depth) for url, status, depth in db.execute("SELECT url, status, depth FROM urls")}
        links = {source: unpack_targets(blob) for source, blob in db.execute("SELECT source, targets FROM links")}
    finally:
        db.close()
    return rows, links


def check_against_truth(truth: TruthLinks, rows: dict[str, tuple[int, int]],
                        links: dict[int, list[int]]) -> int:
    """Every done URL has its list and every list is its page's truth; the
    number of pages checked."""
    from extensions.frontier.store import Status  # noqa: PLC0415

    done = {fp_of(url): (url, depth) for url, (status, depth) in rows.items() if status == Status.DONE}
    assert not [url for fp, (url, _) in done.items() if fp not in links], "done pages without a list"
    by_fp = {fp_of(url): (url, depth) for url, (_, depth) in rows.items()}
    wrong = {}
    for source, targets in links.items():
        url, depth = by_fp[source]  # every source is a URL the frontier filed
        expected = truth.of(url, depth)
        if sorted(targets) != sorted(expected) or len(set(targets)) != len(targets):
            wrong[url] = (len(targets), len(expected))
    assert not wrong, f"recorded lists that are not the truth: {wrong}"
    return len(links)


def test_recorded_graph_is_the_test_webs_links_of_every_fetched_page(tmp_path: Any, start_web: Any) -> None:
    from testweb.crawlrun import run_web_crawl  # noqa: PLC0415

    web = start_web(**WEB)
    settings = crawl_settings(web, JOBDIR=tmp_path / "job")
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings)
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    for trap_stat in ("urlfilter/filtered/calendar", "urlfilter/filtered/descent", "urlfilter/session_stripped"):
        assert not stats.get(trap_stat), trap_stat  # the premise: no order-dependent verdicts
    rows, links = sqlite_graph(tmp_path / "job")
    pages = check_against_truth(TruthLinks(web, settings), rows, links)
    assert pages > 50 and stats["linkgraph/pages"] >= pages
    assert stats["linkgraph/edges"] >= sum(map(len, links.values())) > 2 * pages
    assert stats.get("linkgraph/redirects", 0) > 0  # special.test's redirects are in the graph
    # every target has a URL row, except links of duplicate pages (not followed)
    duplicates = {fp_of(item["url"]) for item in result.items if item.get("duplicate_of")}
    known = {fp_of(url) for url in rows}
    missing = {target for targets in links.values() for target in targets} - known
    assert missing, "a duplicate page's own links are expected to be unknown elsewhere"
    assert missing <= {t for source in duplicates for t in links.get(source, [])}


def test_sigkill_keeps_the_list_of_every_page_marked_done_and_resume_completes_the_graph(
        tmp_path: Any, start_web: Any) -> None:
    import signal  # noqa: PLC0415

    from testweb.crawlrun import kill_crawl, run_web_crawl, start_web_crawl  # noqa: PLC0415
    from testweb.waiting import CrawlActivity, ended, wait_until  # noqa: PLC0415

    web = start_web(**WEB)
    job = tmp_path / "job"
    settings = crawl_settings(web, JOBDIR=job, DOWNLOAD_DELAY=0.02)
    truth = TruthLinks(web, settings)
    proc = start_web_crawl(tmp_path / "run0", str(web.seeds_file), settings)
    target = 40  # fetches before the kill: some pages done, most of the crawl left
    wait_until(lambda: len(web.entries()) >= target or ended([proc]), "pages to fetch before the kill",
               CrawlActivity([tmp_path / "run0"], also=lambda: len(web.entries())))
    assert proc.poll() is None, "the crawl ended before it could be killed"
    kill_crawl(proc, signal.SIGKILL)
    rows, links = sqlite_graph(job)  # what the last write-ahead commit made durable
    assert check_against_truth(truth, rows, links) >= 5
    final = run_web_crawl(tmp_path / "final", str(web.seeds_file), settings)
    assert final.returncode == 0, final.log[-3000:]
    rows, links = sqlite_graph(job)
    pages = check_against_truth(truth, rows, links)
    assert pages > 50 and not [url for url, (status, _) in rows.items() if status in (0, 1)]  # nothing left


def test_on_redis_every_process_records_into_the_shared_store(tmp_path: Any, start_web: Any,
                                                              redis_server: Any) -> None:
    from extensions.backends.redis.store import RedisStore  # noqa: PLC0415
    from testweb.crawlrun import kill_crawl, start_web_crawl  # noqa: PLC0415
    from testweb.redisserver import unique_prefix  # noqa: PLC0415
    from testweb.waiting import wait_for_exit  # noqa: PLC0415
    from tests.test_distributed import WAITING, wait_for_log  # noqa: PLC0415

    web = start_web(**WEB)
    prefix = unique_prefix()
    key = f"{prefix}:start_urls"
    settings = crawl_settings(web, FRONTIER_BACKEND="redis", REDIS_URL=redis_server.url,
                              FRONTIER_REDIS_PREFIX=prefix, SCHEDULER_PERSIST=True, REDIS_START_URLS_KEY=key,
                              MAX_IDLE_TIME_BEFORE_CLOSE=2,
                              DOWNLOAD_DELAY=1.0)  # hosts outlast a lease renewal: the first poller gives some back
    procs = [start_web_crawl(tmp_path / f"crawl{i}", "", settings) for i in range(2)]
    try:  # the seeds come once both processes wait for them, whatever their start-up times
        wait_for_log([tmp_path / f"crawl{i}" / "crawl.log" for i in range(2)], WAITING, procs)
        redis_client = redis.Redis.from_url(redis_server.url)
        redis_client.lpush(key, *[line for line in web.seeds_file.read_text().split() if line])
        redis_client.close()
        wait_for_exit(procs, [tmp_path / f"crawl{i}" for i in range(2)])
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_crawl(proc)
    assert [proc.returncode for proc in procs] == [0, 0]
    store = RedisStore(redis_server.url, prefix)
    store.open()
    try:
        links = {source: targets for batch in store.links.scan(batch=16) for source, targets in batch}
        assert store.links.sources() == len(links)
        names = store.links.node_urls()  # finished URLs have no row on Redis: the segments name them
    finally:
        store.close()
    items = [item for i in range(2) for item in read_items(tmp_path / f"crawl{i}")]
    rows = segment_rows(links, names, items)
    pages = check_against_truth(TruthLinks(web, settings), rows, links)
    assert pages > 50
    assert all(fp_of(url) == fp for fp, url in names.items())  # each node named by its own URL
    assert {target for targets in links.values() for target in targets} <= set(names)
    reports = [json.loads((tmp_path / f"crawl{i}" / "report.json").read_text()) for i in range(2)]
    recorded = [report["stats"].get("linkgraph/pages", 0) for report in reports]
    assert all(recorded) and sum(recorded) >= pages  # both processes recorded pages
    # the lists are in each process's own segment files in the project's default place, not in Redis
    from extensions.backends.redis.store import segments_directory  # noqa: PLC0415
    from extensions.linkgraph.segmentlinks import segment_files  # noqa: PLC0415

    writers = {path.name.rsplit("-", 1)[0] for path in segment_files(segments_directory(prefix))}
    assert len(writers) == 2, writers
    assert not redis_keys(redis_server.url, f"{prefix}:*links*")


def read_items(workdir: Any) -> list[dict[str, Any]]:
    """The items a ``scrapy crawl web`` run wrote (``items.jsonl``)."""
    lines = (workdir / "items.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def segment_rows(links: dict[int, list[int]], names: dict[int, str],
                 items: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """URL -> (status, depth) of every recorded source, for
    :func:`check_against_truth` on a store without the rows of finished URLs:
    named from the segments, done and at its item's depth when it yielded an
    item (a fetched page), else at the depth limit (whose truth is no links:
    only a redirect, whose truth is its Location, may then have a list)."""
    from extensions.frontier.store import Status  # noqa: PLC0415

    depths = {fp_of(item.get("final_url") or item["url"]): int(item.get("depth") or 0) for item in items}
    rows = {names[source]: (Status.DONE if source in depths else Status.QUEUED, depths.get(source, DEPTH))
            for source in links}
    assert set(depths) <= set(links), "fetched pages without a list"
    return rows


def redis_keys(url: str, pattern: str) -> list[bytes]:
    """The keys of the Redis at ``url`` matching ``pattern``."""
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=pattern, count=1000))
    finally:
        client.close()


def test_a_304_keeps_the_list_of_the_last_200_and_a_304_location_is_no_redirect(store: Any) -> None:
    """A 304 item has no links (no body was parsed): recording its empty
    list would wipe the page's outlinks; and a Location on a 304 is not a
    redirect's. Both failed before (the list became empty, the Location an edge)."""
    frontier = make_frontier(store, Clock())
    fetched(frontier, "http://a.test/")
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1"]))
    frontier.page_done(PageVerdict("http://a.test/", [], status=304, not_modified=True))
    assert store.links.targets_of(fp_of("http://a.test/")) == [fp_of("http://b.test/1")]
    request = fetched(frontier, "http://c.test/")
    frontier.response_received(Response("http://c.test/", status=304, headers={"Location": "/elsewhere"},
                                        request=request), request)
    assert store.links.targets_of(fp_of("http://c.test/")) is None
