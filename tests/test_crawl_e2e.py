"""``scrapy crawl web`` end to end against the synthetic test web.

One crawl of a small synthetic web (module scope) is checked against the
web's own ground truth and access log: coverage, no URL twice, robots.txt,
traps, items, WARC output and the report. Bad inputs get their own crawls.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.items import PageItem
from extensions import defaults
from extensions.pipelines.internal import internal_fields
from testweb import WebConfig, start_testweb
from extensions.urls.canonical import canonicalize
from tests.conftest import fetched_urls
from testweb.crawlrun import CrawlResult, run_web_crawl
from testweb.model import canonical_url, host_name

DEPTH = 8


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """(web, truth, result, fetched counts) of one whole crawl."""
    tmp = tmp_path_factory.mktemp("e2e")
    with start_testweb(WebConfig(hosts=12, pages=12, links=6, seed=7), tmp / "web") as web:
        result = run_web_crawl(
            tmp / "crawl", str(web.seeds_file),
            settings={
                "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": DEPTH,
                "CONCURRENT_REQUESTS": 32, "WARC_DIR": tmp / "warc",
                "WARC_MAX_SIZE": 200_000, "PROGRESS_INTERVAL": 1, "JOBDIR": tmp / "job",
            },
        )
        truth = web.truth(depth_limit=DEPTH, robots_5xx="allow")
        yield web, truth, result, fetched_urls(web)


def test_crawl_exits_cleanly_and_finishes(crawl: Any) -> None:
    _, _, result, _ = crawl
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["finish_reason"] == "finished"


def test_every_reachable_allowed_page_is_fetched(crawl: Any) -> None:
    """Every regular page except copies, whose links content-seen does not follow."""
    _, truth, _, fetched = crawl
    missing = set(truth.regular) - set(truth.duplicates) - set(fetched)
    assert not missing, sorted(missing)[:20]


def test_exact_duplicates_are_marked_and_their_links_not_followed(crawl: Any) -> None:
    """mirror0.test is a byte copy of another host: its root is fetched (other
    hosts link it), marked a duplicate of the original, and nothing it links
    on its own host is fetched."""
    web, truth, result, fetched = crawl
    mirror_root = f"http://mirror0.test:{web.port}/"
    items = {item["url"]: item for item in result.items}
    assert items[mirror_root]["duplicate_of"] == truth.duplicates[mirror_root]
    assert [url for url in fetched if url.startswith(mirror_root) and url != mirror_root] == []
    marked = {url for url, item in items.items() if item.get("duplicate_of")}
    assert marked <= set(truth.duplicates) | {u for u in truth.fetched if "/special" in u or "special.test" in u}
    assert result.stats["contentseen/duplicates"] == len(marked)
    assert result.stats["links/not_followed_duplicate"] > 0


def test_near_duplicates_are_found(crawl: Any) -> None:
    """The test web's near-duplicate pages carry ``near_duplicate_of`` (their
    pairs in the ground truth), with a simhash; distinct pages do not."""
    _, truth, result, _ = crawl
    items = {item["url"]: item for item in result.items}
    expected = {url for url in truth.near_duplicates if url in items}
    found = {url for url, item in items.items() if item.get("near_duplicate_of")}
    assert expected, "the test web has near-duplicate pages"
    assert len(expected & found) >= 0.95 * len(expected), sorted(expected - found)
    # regular hosts' pages are distinct by design (random words); templated
    # pages (calendar months, the slow host's pages) are near-duplicates indeed
    regular = {url for url in items if re.match(r"http://h\d+\.test:", url)}
    assert not found & regular, sorted(found & regular)
    html = [item for item in result.items if item["status"] == 200
            and item["content_type"].startswith("text/html") and not item.get("duplicate_of")]
    # pages under CONTENTSEEN_NEAR_MIN_SHINGLES distinct shingles are not judged (no simhash)
    judged = [item for item in html if "simhash" in item]
    assert len(judged) >= 0.5 * len(html) and all(len(item["simhash"]) == 16 for item in judged)


def test_nothing_outside_the_ground_truth_is_fetched(crawl: Any) -> None:
    _, truth, _, fetched = crawl
    extra = set(fetched) - set(truth.fetched)
    assert not extra, sorted(extra)[:20]


def test_no_url_is_fetched_twice_except_retries_of_5xx(crawl: Any) -> None:
    web, _, result, fetched = crawl
    answers: dict[str, list[int]] = {}
    for entry in sorted(web.entries(), key=lambda e: e.start):
        if entry.path != "/robots.txt":
            url = canonical_url(f"http://{entry.host}:{web.port}{entry.path}")
            answers.setdefault(url, []).append(entry.status)
    retried = {url: statuses for url, statuses in answers.items() if len(statuses) > 1}
    assert retried, "the test web has 5xx pages that Scrapy retries"
    retry_times = result.stats.get("retry/max_reached", 0) + 1  # RETRY_TIMES=2 -> 3 fetches
    for url, statuses in retried.items():
        assert all(status >= 500 for status in statuses[:-1]), (url, statuses)
        # a 503 is obeyed as pushback (a pause each time) PUSHBACK_MAX_PER_URL
        # times, then its answer goes to the spider, without retries
        pushback = statuses[0] in defaults.PUSHBACK_STATUSES
        assert len(statuses) <= (defaults.PUSHBACK_MAX_PER_URL + 1 if pushback else 3), (url, statuses)
    assert retry_times > 1


def test_no_disallowed_path_is_fetched(crawl: Any) -> None:
    _, truth, _, fetched = crawl
    assert truth.disallowed, "the test web must have disallowed links"
    assert not set(fetched) & set(truth.disallowed)


def test_nofollow_targets_are_not_fetched(crawl: Any) -> None:
    _, truth, _, fetched = crawl
    assert truth.nofollow, "the test web must have nofollow-only pages"
    assert not set(fetched) & set(truth.nofollow)


def test_traps_are_bounded_by_the_depth_limit(crawl: Any) -> None:
    _, truth, _, fetched = crawl
    trap_fetches = set(fetched) & set(truth.traps)
    assert trap_fetches, "the crawl must have entered the traps"
    assert all(truth.depth[url] <= DEPTH for url in trap_fetches)


def test_one_item_per_fetched_document_with_its_fields(crawl: Any) -> None:
    web, _, result, fetched = crawl
    items = result.items
    urls = Counter(canonical_url(item["url"]) for item in items)  # one item per document
    assert all(n == 1 for n in urls.values())
    redirected = {canonical_url(item["final_url"]) for item in items if item["final_url"] != item["url"]}
    assert set(urls) | redirected <= set(fetched)
    for item in items:
        assert item["url"] == canonicalize(item["url"])
        assert isinstance(item["status"], int) and item["fetched_at"]
        assert item["length"] >= 0 and item["depth"] <= DEPTH
        assert item["outlinks"] >= 0
    roots = [i for i in items if i["url"].endswith(".test:%d/" % web.port) and i["status"] == 200]
    assert roots and all(i["outlinks"] > 0 for i in roots)
    assert any(i["referer"] for i in items)


def test_exported_items_carry_no_internal_fields(crawl: Any) -> None:
    """links, content_features and content_group go from the spider to the
    pipelines (and the frontier), never into the feed; each was consumed by
    its pipeline, none left over for the last one to report."""
    _, _, result, _ = crawl
    internal = set(internal_fields(PageItem))
    assert internal >= {"links", "content_features", "content_group"}
    exported = set(PageItem.fields) - internal
    assert result.items and all(set(item) <= exported for item in result.items)
    assert not [key for key in result.stats if key.startswith("items/unconsumed/")]


def test_content_groups_reach_the_url_database(crawl: Any) -> None:
    """The page entry point files each judged page's content group in the
    URL database (JOBDIR/frontier.sqlite3): a copy in its original's group,
    flagged a duplicate; a near duplicate in its pair's group, not flagged."""
    web, truth, result, _ = crawl
    with sqlite3.connect(result.workdir.parent / "job" / "frontier.sqlite3") as db:
        rows = {url: (group, duplicate) for url, group, duplicate in db.execute(
            "SELECT url, group_id, duplicate FROM urls_readable WHERE group_id IS NOT NULL")}
    mirror_root = f"http://mirror0.test:{web.port}/"
    original = truth.duplicates[mirror_root]
    assert rows[mirror_root] == (rows[original][0], 1)
    assert rows[original][1] == 0
    pairs = [(url, of) for url, of in truth.near_duplicates.items() if url in rows and of in rows]
    assert pairs, "the test web has near-duplicate pages"
    same = [url for url, of in pairs if rows[url][0] == rows[of][0] and rows[url][1] == 0]
    assert len(same) >= 0.95 * len(pairs), sorted(set(dict(pairs)) - set(same))


def test_processing_modules_fill_items_by_mime_type(crawl: Any) -> None:
    _, _, result, _ = crawl
    images = [i for i in result.items if i["content_type"].startswith("image/")]
    assert images, "the test web links images"
    for item in images:
        image = item["processed"]["image"]
        assert image["format"] in {"gif", "png", "jpeg"} and image["width"] > 0
    html = [i for i in result.items if i["content_type"].startswith("text/html") and i["status"] == 200]
    linking = {"a", "area", "link", "frame", "iframe"}
    assert html and all(linking & set(i["processed"]["tags"]) for i in html if i["outlinks"])


def test_warc_files_hold_a_request_and_an_answer_per_fetch_copies_as_revisits(crawl: Any) -> None:
    _, truth, result, fetched = crawl
    files = sorted((result.workdir.parent / "warc").glob("*.warc.gz"))
    assert len(files) > 1, "WARC_MAX_SIZE must rotate files"
    answers: dict[str, str] = {}
    requests = 0
    for path in files:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type in ("response", "revisit") and not uri.endswith("/robots.txt"):
                    answers[canonical_url(uri)] = record.rec_type
                requests += record.rec_type == "request"
    assert set(answers) == set(fetched)
    assert requests >= len(answers)
    # an exact copy (a mirror's page) and its original: the one fetched second is a revisit
    pairs = [(copy, original) for copy, original in truth.duplicates.items() if copy in answers and original in answers]
    assert pairs and all({answers[copy], answers[original]} == {"response", "revisit"} for copy, original in pairs)


def test_report_counts_what_the_web_served(crawl: Any) -> None:
    web, _, result, fetched = crawl
    report = result.report
    assert report["pages"] == sum(fetched.values())
    assert report["hosts"] == len({e.host for e in web.entries()})
    assert report["pages_per_second"] > 0
    assert "Progress:" in result.log


def test_startup_objects_are_frozen_out_of_the_collector_for_the_crawl(crawl: Any) -> None:
    _, _, result, _ = crawl
    assert result.stats["gc/frozen"] > 10_000  # Scrapy, Twisted, lxml and ours


def _crawl(tmp_path: Path, seeds: str, web: Any | None = None, **settings: Any) -> CrawlResult:
    if web is not None:
        settings.setdefault("DNS_HOSTS", web.hosts_file)
    return run_web_crawl(tmp_path / "crawl", seeds, settings=settings, timeout=120)


def test_missing_seeds_file_is_a_clear_error(tmp_path: Path) -> None:
    result = _crawl(tmp_path, str(tmp_path / "no-such-seeds.txt"))
    assert result.returncode != 0
    assert "seeds: file not found" in result.log + (tmp_path / "crawl" / "stdout.txt").read_text()


def test_invalid_seeds_are_skipped_and_counted(tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=3, pages=3, links=2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "# comment\n\nhttp://\nhttp://exa mple.test/\nftp://h0000.test/x\n"
        f"{web.url('h0000.test', '/')}\n"
    )
    result = _crawl(tmp_path, str(seeds), web, DEPTH_LIMIT=1)
    assert result.returncode == 0, result.log[-2000:]
    assert result.stats["seeds/invalid"] == 2
    assert result.stats["seeds/filtered"] == 1
    assert result.stats["seeds/accepted"] == 1
    truth = web.truth(depth_limit=1, seeds=[web.url("h0000.test", "/")])
    assert set(fetched_urls(web)) == set(truth.fetched)


def test_allowed_domains_limit_the_crawl(tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=6, pages=4, links=4)
    result = run_web_crawl(
        tmp_path / "crawl", web.url("h0000.test", "/"),
        settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 3},
        spider_args={"allowed_domains": "h0000.test"},
    )
    assert result.returncode == 0, result.log[-2000:]
    hosts = {e.host for e in web.entries()}
    assert hosts == {"h0000.test"}
    assert result.stats.get("urlfilter/filtered/domain", 0) > 0


def test_an_offsite_redirect_is_followed_only_without_allowed_domains(tmp_path: Path, start_web: Any) -> None:
    """special.test/r/out redirects to another host. With allowed_domains,
    Scrapy's OffsiteMiddleware drops the redirect; without, the spider
    switches that middleware off and the target is fetched."""
    web = start_web(hosts=6, pages=4, links=4)
    target = (host_name(3), f"/p/{web.config.pages - 1}.html")

    def crawl(name: str, **spider_args: str) -> tuple[bool, bool, dict[str, Any]]:
        since = time.time()
        result = run_web_crawl(tmp_path / name, web.url("special.test", "/r/out"),
                               settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1}, spider_args=spider_args)
        assert result.returncode == 0, result.log[-2000:]
        followed = any((e.host, e.path) == target for e in web.entries() if e.start >= since)
        return followed, "downloadermiddlewares.offsite.OffsiteMiddleware" in result.log, result.stats

    followed, offsite_on, stats = crawl("open")
    assert followed and not offsite_on and "offsite/filtered" not in stats
    followed, offsite_on, stats = crawl("scoped", allowed_domains="special.test")
    assert not followed and offsite_on and stats["offsite/filtered"] == 1


LINK_SCHEDULER = "extensions.pipelines.links.LinkScheduler"


def test_without_links_in_items_the_spider_follows_links_and_content_seen_still_judges(
        tmp_path: Path, start_web: Any) -> None:
    """LINKS_IN_ITEMS = False with LinkScheduler disabled: the spider yields
    the links as requests (so a copy's links are followed too), and the
    content-seen verdicts still come from the item's data."""
    web = start_web(hosts=4, pages=6)
    seeds = f"{web.url('h0001.test')},{web.url('mirror0.test')}"
    result = _crawl(tmp_path, seeds, web, DEPTH_LIMIT=1, LINKS_IN_ITEMS=False,
                    ITEM_PIPELINES=json.dumps({LINK_SCHEDULER: None}))
    assert result.returncode == 0, result.log[-2000:]
    items = {item["url"]: item for item in result.items}
    truth = web.truth(depth_limit=1, seeds=seeds.split(","))
    assert set(fetched_urls(web)) == set(truth.fetched)
    # both seeds are fetched at once: whichever is judged second is the copy
    original, mirror = web.url("h0001.test"), web.url("mirror0.test")
    verdicts = (items[mirror].get("duplicate_of"), items[original].get("duplicate_of"))
    assert verdicts in ((original, None), (None, mirror)), verdicts
    assert not any({"links", "content_features", "content_group"} & set(item) for item in result.items)
    assert "links/not_followed_duplicate" not in result.stats


@pytest.mark.parametrize("settings", [
    {"ITEM_PIPELINES": json.dumps({LINK_SCHEDULER: None})},
    {"LINKS_IN_ITEMS": False},
], ids=["links-in-items-without-scheduler", "scheduler-without-links-in-items"])
def test_links_in_items_disagreeing_with_the_pipelines_fails_at_start(
        tmp_path: Path, start_web: Any, settings: dict[str, Any]) -> None:
    """Links on items with nothing to schedule them would crawl the seeds
    only, silently; the add-on refuses the configuration, naming both."""
    web = start_web(hosts=2, pages=2)
    result = _crawl(tmp_path, web.url("h0000.test"), web, **settings)
    output = result.log + (tmp_path / "crawl" / "stdout.txt").read_text()
    assert result.returncode != 0
    assert "LINKS_IN_ITEMS" in output and LINK_SCHEDULER in output
    assert not web.entries()


def test_on_scrapys_own_scheduler_the_spider_still_follows_every_link(tmp_path: Path, start_web: Any) -> None:
    """Our spider and pipelines with ``SCHEDULER`` set to Scrapy's own: no
    frontier to hand the page to, so no AOPIC credit, but every link is
    crawled. Was: Scrapy's scheduler metaclass answers ``isinstance`` by
    duck typing, so the pipeline took Scrapy's scheduler for the frontier,
    called its missing ``page_done`` and the crawl stopped at the seeds."""
    web = start_web(hosts=3, pages=5, links=4)
    seeds = ",".join(web.url(f"h000{i}.test") for i in range(3))
    # a robots.txt answering 5xx: no restrictions at once (holding an
    # origin needs the frontier), as the truth's robots_5xx="allow" has it
    result = _crawl(tmp_path, seeds, web, DEPTH_LIMIT=3, SCHEDULER="scrapy.core.scheduler.Scheduler",
                    ROBOTSTXT_UNREACHABLE_PERIOD=0)
    assert result.returncode == 0, result.log[-2000:]
    assert "Error processing" not in result.log
    truth = web.truth(depth_limit=3, seeds=seeds.split(","), robots_5xx="allow")
    missing = set(truth.fetched) - set(truth.duplicates) - set(fetched_urls(web))
    assert not missing, sorted(missing)
    assert all("importance" not in item for item in result.items)


def test_a_default_crawl_logs_no_warning_of_its_own_making(tmp_path: Path) -> None:
    """Optional components that are off say nothing; redirects keep their
    Referer (Scrapy's RefererMiddleware is on), so nothing warns but what the
    web did (its server errors, its unreachable robots.txt)."""
    with start_testweb(WebConfig(hosts=4, pages=8, links=4, seed=3), tmp_path / "web") as web:
        result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={"DNS_HOSTS": web.hosts_file})
    assert result.returncode == 0, result.log[-3000:]
    the_webs = ("Gave up retrying", "robots.txt of http")
    warnings = [line for line in result.log.splitlines()
                if ("] WARNING:" in line or "] ERROR:" in line) and not any(text in line for text in the_webs)]
    assert not warnings, "\n".join(warnings[:20])
    assert "redirect" in result.log.lower() or result.stats.get("downloader/response_status_count/301")
    assert result.report["finish_reason"] == "finished"


def test_a_backend_plugged_in_by_class_path_crawls_the_whole_web(tmp_path: Path) -> None:
    """A third-party backend (tests/thirdparty_backend.py, wrapping the memory
    one) named only in the settings: the crawl runs on it and covers the web."""
    with start_testweb(WebConfig(hosts=4, pages=8, links=4, seed=3), tmp_path / "web") as web:
        result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
            "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": DEPTH,
            "FRONTIER_BACKEND": "tests.thirdparty_backend.ThirdPartyBackend"})
        truth = web.truth(depth_limit=DEPTH, robots_5xx="allow")
        fetched = fetched_urls(web)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats.get("thirdparty/store_opens") == 1
    missing = set(truth.regular) - set(truth.duplicates) - set(fetched)
    assert not missing, sorted(missing)[:20]
    assert all(count == 1 for url, count in fetched.items() if "/error/" not in url)  # retries aside


def test_a_projects_request_fingerprinter_keys_the_url_seen_test(tmp_path: Path) -> None:
    """``REQUEST_FINGERPRINTER_CLASS`` decides which URLs are the same, as with
    Scrapy's scheduler: with one fingerprint per host, each host's first URL
    is fetched and every other one is a duplicate, links and seeds alike."""
    with start_testweb(WebConfig(hosts=4, pages=8, links=4, seed=3), tmp_path / "web") as web:
        result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
            "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": DEPTH,
            "REQUEST_FINGERPRINTER_CLASS": "tests.fingerprinters.HostOnlyFingerprinter"})
        fetched = fetched_urls(web)
    assert result.returncode == 0, result.log[-3000:]
    pages = Counter(urlsplit(url).hostname for url in fetched if not url.endswith("/robots.txt"))
    assert len(pages) >= 2 and set(pages.values()) == {1}, pages
    assert result.stats.get("frontier/duplicates", 0) > 0
