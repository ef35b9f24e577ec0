"""Conditional GET for re-visits (:mod:`extensions.revisit.conditional`) and
the ``web`` spider's 304 items, on real crawls.

Re-visit validators come from the frontier; here a test downloader
middleware puts them on the requests of chosen URLs (``tests/_revisit_probe.py``),
and a test pipeline before content-seen records what the spider put on each
item, internal fields included. The servers: Debian's nginx serving real
documentation (it sends ``ETag`` and ``Last-Modified`` for static files and
answers a matching ``If-None-Match`` or an exactly equal
``If-Modified-Since`` with 304), and a :class:`~testweb.localserver.LocalServer`
that records each request's conditional headers as received.
"""

from __future__ import annotations

import json
import os
import re
import threading
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Headers
from scrapy.utils.test import get_crawler

from extensions.revisit.conditional import (
    MAX_VALIDATOR_LENGTH,
    ConditionalGetMiddleware,
    clean_etag,
    clean_last_modified,
    response_validators,
)
from testweb.crawlrun import CrawlResult, run_web_crawl
from testweb.localserver import HTML, LocalServer, Reply
from testweb.localserver import Request as ServerRequest

PROBE = "tests._revisit_probe"
DATE = "Tue, 15 Nov 1994 08:12:31 GMT"


def conditional_crawl(workdir: Path, seeds: list[str], validators: dict[str, Any],
                      settings: dict[str, Any] | None = None) -> tuple[CrawlResult, dict[str, dict[str, Any]]]:
    """A ``scrapy crawl web`` of ``seeds`` whose requests for the URLs of
    ``validators`` carry them; the result and the probed items by URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "seeds.txt").write_text("".join(f"{url}\n" for url in seeds))
    (workdir / "validators.json").write_text(json.dumps(validators))
    result = run_web_crawl(workdir, str(workdir / "seeds.txt"), {
        "DOWNLOADER_MIDDLEWARES": json.dumps({f"{PROBE}.InjectValidators": 700}),
        "ITEM_PIPELINES": json.dumps({f"{PROBE}.ProbeItems": 250}),
        "TEST_REVISIT_VALIDATORS_FILE": workdir / "validators.json",
        "TEST_ITEM_PROBE_FILE": workdir / "probe.jsonl",
        **(settings or {}),
    })
    assert result.returncode == 0, result.log[-3000:]
    probe = workdir / "probe.jsonl"
    lines = probe.read_text().splitlines() if probe.exists() else []
    return result, {record["url"]: record for record in map(json.loads, lines)}


def only(urls: list[str]) -> str:
    """A URL_FILTER_DENY pattern refusing every URL but these."""
    return "^(?!(" + "|".join(re.escape(url) for url in urls) + ")$)"


# -- nginx ---------------------------------------------------------------------

def nginx_validators(path: Path) -> tuple[str, str]:
    """The ETag and Last-Modified nginx sends for a static file."""
    stat = os.stat(path)
    return f'"{int(stat.st_mtime):x}-{stat.st_size:x}"', formatdate(int(stat.st_mtime), usegmt=True)


def test_nginx_validators_go_on_the_item_and_come_back_as_a_304_without_links(realweb: Any, tmp_path: Path) -> None:
    site = realweb.site("nodejs.org")
    names = ["index.html", "assert.html", "buffer.html"]
    urls = [f"{realweb.origin(site.host)}/{name}" for name in names]
    settings = {"DNS_HOSTS": realweb.hosts_file, "URL_FILTER_DENY": only(urls)}
    start = len(realweb.entries())
    first, items = conditional_crawl(tmp_path / "first", urls, {}, settings)
    truth = {url: nginx_validators(site.document_root / name) for url, name in zip(urls, names)}
    for url in urls:  # a 200's item carries nginx's validators exactly
        assert items[url]["status"] == 200 and "not_modified" not in items[url]["fields"]
        assert (items[url]["etag"], items[url]["last_modified"]) == truth[url]
        assert items[url]["processed"]  # parsed as usual
    assert first.stats.get("revisit/conditional_requests") is None  # nothing stored: nothing sent
    assert not any(key.startswith("revisit/") for key in first.stats)
    middle = len(realweb.entries())

    index, assert_page, buffer = urls
    stored = {
        index: {"etag": items[index]["etag"], "last_modified": None},  # If-None-Match only
        assert_page: {"etag": None, "last_modified": items[assert_page]["last_modified"]},  # If-Modified-Since only
        buffer: {"etag": '"0-0"', "last_modified": None},  # a stale tag: nginx sends the page
    }
    second, revisited = conditional_crawl(tmp_path / "second", urls, stored, settings)
    log = {entry.path: entry.status for entry in realweb.entries()[middle:] if entry.host == site.host}
    assert log == {"/robots.txt": 200, "/index.html": 304, "/assert.html": 304, "/buffer.html": 200}
    for url in (index, assert_page):
        item = revisited[url]
        assert item["status"] == 304 and item["not_modified"] is True and item["final_url"] == url
        # not parsed: no processing modules, no links, no content features
        assert item["processed"] is None and item["links"] is None
        assert not {"links", "content_features", "processed", "outlinks"} & set(item["fields"])
        assert {"url", "final_url", "status", "fetched_at", "depth", "not_modified"} <= set(item["fields"])
        assert item["etag"] == truth[url][0]  # nginx repeats its ETag on a 304
    assert revisited[buffer]["status"] == 200 and revisited[buffer]["etag"] == truth[buffer][0]
    assert second.stats["revisit/conditional_requests"] == 3
    assert second.stats["revisit/not_modified"] == 2
    assert second.stats["contentseen/checked"] == 1  # the 304s are no pages to judge
    feed = {item["url"]: item for item in second.items}
    assert feed[index]["not_modified"] is True and feed[index]["status"] == 304
    assert not {"etag", "last_modified", "links"} & set(feed[index])  # internal: never in a feed
    assert len(realweb.entries()) > start


# -- a local server that records the conditional headers ---------------------

class RevisitWeb:
    """Pages whose answers depend on the conditional headers received."""

    ETAG_SAME = 'W/"v1-caf\xe9"'  # a weak tag with an obs-text byte: sent back as the same bytes

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: dict[str, list[tuple[str | None, str | None]]] = {}
        self.calls: dict[str, int] = {}

    def answer(self, request: ServerRequest) -> Reply:
        path = request.path
        sent = (request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since"))
        with self.lock:
            self.received.setdefault(path, []).append(sent)
            self.calls[path] = calls = self.calls.get(path, 0) + 1
        return self.reply(path, sent, calls)

    def reply(self, path: str, sent: tuple[str | None, str | None], calls: int) -> Reply:
        # distinct text: content-seen must not take the pages for copies of each other
        body = f'<html><body><a href="{path}/child">child of {path}</a></body></html>'.encode()
        page = Reply(200, body, {"Content-Type": HTML})
        not_modified = Reply(304, b"", {"ETag": self.ETAG_SAME})
        if path == "/same":
            return not_modified if sent == (self.ETAG_SAME, DATE) else page
        if path in ("/with-links", "/moved-target", "/cached"):
            return Reply(304, b"", {}) if sent[0] == '"t1"' else Reply(200, page.body, {"Content-Type": HTML, "ETag": '"t1"'})
        if path == "/moved":
            return Reply(301, b"", {"Location": "/moved-target"})
        if path == "/gzip-304":  # a 304 claiming a coding for its empty body
            return Reply(304, b"", {"Content-Encoding": "gzip"})
        if path == "/plain":
            return Reply(200, page.body, {"Content-Type": HTML, "ETag": '"p1"', "Last-Modified": DATE})
        if path == "/bad-response":
            return Reply(200, page.body, {"Content-Type": HTML, "ETag": '"' + "x" * MAX_VALIDATOR_LENGTH + '"',
                                          "Last-Modified": "the day before yesterday"})
        if path == "/gone":
            return page if calls == 1 else Reply(404, b"gone", {"Content-Type": "text/plain"})
        if path == "/unasked":  # a 304 nobody asked for
            return Reply(304, b"", {})
        if path in ("/bad-stored", "/not-a-mapping"):
            return page
        return Reply(404, b"", {"Content-Type": "text/plain"})


@pytest.fixture
def revisit_web() -> Any:
    web = RevisitWeb()
    with LocalServer(web.answer) as server:
        yield web, server


def test_validators_are_sent_exactly_as_stored_and_bad_ones_are_counted_not_sent(
        revisit_web: Any, tmp_path: Path) -> None:
    web, server = revisit_web
    url = server.url
    stored = {
        url("/same"): {"etag": RevisitWeb.ETAG_SAME, "last_modified": DATE},
        url("/with-links"): {"etag": '"t1"', "last_modified": None},
        url("/moved"): {"etag": '"t1"', "last_modified": None},
        url("/gzip-304"): {"etag": '"g"', "last_modified": None},
        url("/bad-stored"): {"etag": '"a"\r\nX-Injected: 1', "last_modified": "yesterday"},
        url("/not-a-mapping"): '"a"',
    }
    seeds = [*stored, url("/plain"), url("/bad-response")]
    result, items = conditional_crawl(tmp_path, seeds, stored)

    assert web.received["/same"] == [(RevisitWeb.ETAG_SAME, DATE)]
    assert web.received["/with-links"] == [('"t1"', None)]
    # a redirect keeps the headers on the way to its target (304 itself is no redirect)
    assert web.received["/moved"] == web.received["/moved-target"] == [('"t1"', None)]
    for path in ("/plain", "/bad-response", "/bad-stored", "/not-a-mapping", "/robots.txt"):
        assert web.received[path] == [(None, None)], path  # nothing stored, or nothing fit to send
    # the 304 pages' links were not read (the 200s' were)
    assert not {"/same/child", "/with-links/child", "/moved-target/child"} & set(web.received)
    assert {"/plain/child", "/bad-stored/child"} <= set(web.received)

    for path in ("/same", "/with-links", "/gzip-304"):
        item = items[url(path)]
        assert (item["status"], item["not_modified"], item["links"]) == (304, True, None), path
    assert items[url("/same")]["etag"] == RevisitWeb.ETAG_SAME
    moved = items[url("/moved")]
    assert (moved["final_url"], moved["status"], moved["not_modified"]) == (url("/moved-target"), 304, True)
    assert (items[url("/plain")]["etag"], items[url("/plain")]["last_modified"]) == ('"p1"', DATE)
    assert items[url("/plain")]["links"] == [url("/plain/child")]
    bad = items[url("/bad-response")]  # too long, not a date: ignored, counted, the page still crawled
    assert (bad["status"], bad["etag"], bad["last_modified"]) == (200, None, None)

    stats = result.stats
    assert stats["revisit/conditional_requests"] == 4  # /moved's redirect not counted twice
    assert stats["revisit/not_modified"] == 4
    assert stats["revisit/validators_ignored/etag"] == 1
    assert stats["revisit/validators_ignored/last_modified"] == 1
    assert stats["revisit/validators_ignored/not_a_mapping"] == 1
    assert stats["revisit/response_validators_ignored/etag"] == 1
    assert stats["revisit/response_validators_ignored/last_modified"] == 1
    # content-seen judged the four 200 pages only (the children are 404s);
    # the 304s are not counted as pages
    assert stats["contentseen/checked"] == 4


def test_the_http_cache_neither_answers_a_revisit_nor_eats_its_304(revisit_web: Any, tmp_path: Path) -> None:
    web, server = revisit_web
    cached, gone, unasked = server.url("/cached"), server.url("/gone"), server.url("/unasked")
    settings = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": tmp_path / "cache",
                "URL_FILTER_DENY": only([cached, gone, unasked])}
    conditional_crawl(tmp_path / "first", [cached, gone], {}, settings)
    assert web.calls == {"/robots.txt": 1, "/cached": 1, "/gone": 1}
    # without HTTPERROR_ALLOW_ALL, the statuses allowed before (404) stay allowed
    strict = {**settings, "HTTPERROR_ALLOW_ALL": False, "HTTPERROR_ALLOWED_CODES": "404"}
    stored = {url: {"etag": '"t1"', "last_modified": None} for url in (cached, gone)}
    result, items = conditional_crawl(tmp_path / "second", [cached, gone, unasked], stored, strict)
    assert web.received["/cached"] == [(None, None), ('"t1"', None)]  # asked again, not the cache's copy
    assert (items[cached]["status"], items[cached]["not_modified"]) == (304, True)
    assert items[gone]["status"] == 404
    # a request without validators is left as it was: its 304 is an HTTP error as before
    assert web.received["/unasked"] == [(None, None)] and unasked not in items
    assert result.stats["revisit/not_modified"] == 1


# -- the validator tests, with numbers ----------------------------------------

@pytest.mark.parametrize("value, expected", [
    ('"abc"', '"abc"'), ('W/"abc"', 'W/"abc"'), ("abc", "abc"), ('"caf\xe9"', '"caf\xe9"'),
    ("", None), ("  ", None), (None, None), (17, None), ('"a"\r\nX: 1', None), ('"a\x00"', None),
    ('"\u20ac"', None), ("x" * (MAX_VALIDATOR_LENGTH + 1), None),
])
def test_an_etag_is_sent_back_only_if_it_is_one_safe_header_value(value: Any, expected: str | None) -> None:
    assert clean_etag(value) == expected


@pytest.mark.parametrize("value, expected", [
    (DATE, DATE), ("Sunday, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT"),
    ("yesterday", None), ("", None), (" " + DATE + "\t", DATE), (DATE + "\n", None), (DATE + "\r\nX: 1", None),
])
def test_a_last_modified_is_sent_back_only_if_it_is_an_http_date(value: Any, expected: str | None) -> None:
    assert clean_last_modified(value) == expected


def test_response_validators_are_the_exact_header_text_and_bad_ones_are_counted() -> None:
    crawler = get_crawler()
    crawler.stats.open_spider()
    headers = Headers({"ETag": b'"caf\xe9"', "Last-Modified": DATE.encode()})
    assert response_validators(headers, crawler.stats) == ('"caf\xe9"', DATE)
    assert response_validators(Headers(), crawler.stats) == (None, None)
    twice = Headers({"ETag": [b'"a"', b'"b"'], "Last-Modified": b"soon"})
    assert response_validators(twice, crawler.stats) == (None, None)
    assert crawler.stats.get_stats() == {"revisit/response_validators_ignored/etag": 1,
                                         "revisit/response_validators_ignored/last_modified": 1}


def conditional(meta: dict[str, Any], allow_all: bool = False, codes: tuple[int, ...] = (404,),
                headers: dict[str, str] | None = None) -> Request:
    crawler = get_crawler()
    crawler.stats.open_spider()
    request = Request("http://a.test/", meta=meta, headers=headers)
    ConditionalGetMiddleware(crawler.stats, allow_all, codes).process_request(request)
    return request


def test_304_is_added_to_the_statuses_the_request_already_let_through() -> None:
    validators = {"revisit_validators": {"etag": '"a"', "last_modified": None}}
    assert conditional(validators).meta["handle_httpstatus_list"] == [404, 304]
    assert conditional({**validators, "handle_httpstatus_list": [500]}).meta["handle_httpstatus_list"] == [500, 304]
    assert "handle_httpstatus_list" not in conditional(validators, allow_all=True).meta  # all pass already
    assert "handle_httpstatus_list" not in conditional({**validators, "handle_httpstatus_all": True}).meta
    assert conditional(validators).meta["dont_cache"] is True
    untouched = conditional({})
    assert untouched.meta == {} and b"If-None-Match" not in untouched.headers
    # a re-visit of a page that had no validators: not from the HTTP cache either
    bare = conditional({"revisit_validators": {"etag": None, "last_modified": None}})
    assert bare.meta["dont_cache"] is True and "handle_httpstatus_list" not in bare.meta
    assert not {b"If-None-Match", b"If-Modified-Since"} & set(bare.headers)


def test_a_conditional_header_the_request_already_has_is_kept() -> None:
    validators = {"revisit_validators": {"etag": '"a"', "last_modified": DATE}}
    request = conditional(validators, headers={"If-None-Match": '"mine"'})
    assert request.headers[b"If-None-Match"] == b'"mine"'
    assert request.headers[b"If-Modified-Since"] == DATE.encode()
