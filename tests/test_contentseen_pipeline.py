"""The content-seen pipeline: verdicts judged from the item's data alone
(the spider's ``content_features``), and in real crawls recorded in the URL
database and surviving a resume (``scrapy crawl web`` as a subprocess)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from extensions.contentseen.features import content_features
from extensions.pipelines.contentseen import ContentSeenPipeline
from testweb.crawlrun import run_web_crawl
from testweb.localserver import NOT_FOUND, LocalServer, Reply, Request, Responder


def items_by_url(result: Any) -> dict[str, dict[str, Any]]:
    return {item["url"]: item for item in result.items}


@pytest.fixture
def judge(tmp_path: Path) -> Iterator[Any]:
    """``judge(url, html)``: the pipeline's item for a page as the spider
    hands it over (no response: only its content features)."""
    crawler = get_crawler(Spider, {"CONTENTSEEN_BACKEND": "sqlite", "JOBDIR": str(tmp_path),
                                   "CONTENTSEEN_FLUSH_INTERVAL": 0})
    crawler.stats.open_spider()
    pipeline = ContentSeenPipeline.from_crawler(crawler)
    pipeline.open_spider()

    def run(url: str, html: str | None, **fields: Any) -> PageItem:
        item = PageItem(url=url, status=200, content_type="text/html", **fields)
        if html is not None:
            item["content_features"] = content_features(html.encode(), "utf-8", "text/html")
        return pipeline.process_item(item)

    run.stats = crawler.stats
    yield run
    pipeline.close()


def prose(seed: int, count: int = 300) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
                    for _ in range(count))


PROSE, OTHER = prose(6), prose(7)


def test_verdicts_come_from_the_items_content_features_which_are_removed(judge: Any) -> None:
    original = judge("http://a.test/", f"<p>{PROSE}</p>")
    copy = judge("http://b.test/", f"<div>{PROSE}</div>")  # other markup, same text
    near = judge("http://c.test/", f"<p>{PROSE} postscript</p>")
    other = judge("http://d.test/", f"<p>{OTHER}</p>")
    items = (original, copy, near, other)
    assert not any("content_features" in item for item in items)
    assert copy["duplicate_of"] == "http://a.test/" and copy["fingerprint"] == original["fingerprint"]
    assert near["near_duplicate_of"] == "http://a.test/" and "duplicate_of" not in near
    assert "duplicate_of" not in other and "near_duplicate_of" not in other
    assert judge.stats.get_value("contentseen/checked") == 4


def test_content_group_is_the_pages_group_and_a_copy_joins_its_originals(judge: Any) -> None:
    original = judge("http://a.test/", f"<p>{PROSE}</p>")
    copy = judge("http://b.test/", f"<p>{PROSE}</p>")
    near = judge("http://c.test/", f"<p>{PROSE} postscript</p>")
    other = judge("http://d.test/", f"<p>{OTHER}</p>")
    group = original["content_group"]
    assert isinstance(group, int)
    assert copy["content_group"] == near["content_group"] == group != other["content_group"]


def test_an_item_without_content_features_is_not_judged(judge: Any) -> None:
    """Sitemaps, error pages, or a spider that computed nothing: no verdict,
    no fingerprint, group None."""
    item = judge("http://a.test/sitemap.xml", None, fingerprint=None)
    assert item["content_group"] is None and item.get("fingerprint") is None
    assert "duplicate_of" not in item and judge.stats.get_value("contentseen/checked") is None


def test_a_page_too_short_to_judge_has_no_group(judge: Any) -> None:
    short = judge("http://a.test/", "<p>calendar 2026 no events</p>")
    copy = judge("http://b.test/", "<p>calendar 2026 no events</p>")
    assert short["content_group"] is None and copy["content_group"] is None
    assert copy["duplicate_of"] == "http://a.test/"
    assert judge.stats.get_value("contentseen/near_too_short") == 2


def test_duplicate_verdicts_survive_a_resume_and_reach_the_url_database(
        start_web: Any, tmp_path: Path) -> None:
    """First run: h0001.test. Second run, same JOBDIR, seeded with its byte
    copy mirror0.test: the copy is recognised from the first run's set, its
    links are not followed, and both URLs share a content group."""
    web = start_web(hosts=4, pages=6)
    job = tmp_path / "job"
    settings = {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1, "JOBDIR": job}
    original, copy = web.url("h0001.test"), web.url("mirror0.test")
    first = run_web_crawl(tmp_path / "first", original, settings=settings)
    assert first.returncode == 0, first.log[-2000:]
    assert items_by_url(first)[original].get("duplicate_of") is None
    second = run_web_crawl(tmp_path / "second", f"{original},{copy}", settings=settings)
    assert second.returncode == 0, second.log[-2000:]
    item = items_by_url(second)[copy]
    assert item["duplicate_of"] == original
    assert item["fingerprint"] == items_by_url(first)[original]["fingerprint"]
    assert not [url for url in items_by_url(second) if url.startswith(copy) and url != copy]
    with sqlite3.connect(job / "frontier.sqlite3") as db:
        rows = dict(db.execute(
            "SELECT url, group_id || ':' || duplicate FROM urls_readable WHERE url IN (?, ?)",
            (original, copy)).fetchall())
    group = rows[original].split(":")[0]
    assert rows == {original: f"{group}:0", copy: f"{group}:1"}


def test_content_seen_can_be_switched_off(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=4, pages=6)
    result = run_web_crawl(tmp_path / "off", f"{web.url('h0001.test')},{web.url('mirror0.test')}",
                           settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1,
                                     "CONTENTSEEN_ENABLED": False})
    assert result.returncode == 0
    assert not any(item.get("duplicate_of") or item.get("fingerprint") for item in result.items)
    assert any(url.startswith(web.url("mirror0.test")) and url != web.url("mirror0.test")
               for url in items_by_url(result))  # the copy's links are followed


def test_large_pages_are_judged_by_their_bytes_and_their_first_text(
        start_web: Any, tmp_path: Path) -> None:
    """Over CONTENTSEEN_MAX_TEXT_BYTES a page's exact test uses all its bytes
    and its simhash the first part: copies are still caught, memory stays low."""
    web = start_web(hosts=4, pages=6)
    original, copy = web.url("h0001.test"), web.url("mirror0.test")
    result = run_web_crawl(tmp_path / "large", f"{original},{copy}", settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1, "CONTENTSEEN_MAX_TEXT_BYTES": 200,
            "CONTENTSEEN_NEAR_MIN_SHINGLES": 1})  # 200 bytes are fewer shingles than the default
    assert result.returncode == 0
    items = items_by_url(result)
    # both seeds are fetched at once: whichever is judged second is the copy
    verdicts = (items[copy].get("duplicate_of"), items[original].get("duplicate_of"))
    assert verdicts in ((original, None), (None, copy)), verdicts
    assert len(items[original]["simhash"]) == 16


EMPTY_TEXT_SITE = {
    # every page without visible text links a page of its own
    "index.html": '<html><body><a href="a.html">a</a> <a href="b.html">b</a> <a href="c.html">c</a></body></html>',
    "a.html": '<html><frameset cols="50%,50%"><frame src="a1.html"><frame src="a2.html"></frameset></html>',
    "b.html": '<html><frameset cols="50%,50%"><frame src="b1.html"><frame src="b2.html"></frameset></html>',
    "c.html": '<html><body><a href="c1.html"><img src="c.png" alt=""></a></body></html>',
    **{f"{page}.html": f"<html><body><p>frame {page}</p></body></html>" for page in ("a1", "a2", "b1", "b2", "c1")},
}


def static_site(files: dict[str, str]) -> Responder:
    """``/NAME`` answers ``files[NAME]`` as HTML; anything else 404."""
    def respond(request: Request) -> Reply:
        html = files.get(request.path.lstrip("/"))
        return NOT_FOUND if html is None else Reply(200, html.encode())
    return respond


@pytest.fixture
def empty_text_site() -> Iterator[tuple[str, LocalServer]]:
    """:data:`EMPTY_TEXT_SITE` on a free loopback port as ``frames.test``;
    yields its root URL and the server (its hits: what was requested)."""
    with LocalServer(static_site(EMPTY_TEXT_SITE)) as server:
        yield server.url("/index.html", host="frames.test"), server


def test_pages_without_visible_text_are_not_duplicates_of_each_other(empty_text_site, tmp_path: Path) -> None:
    """Issue 12: two framesets (or an image-only page) have the same empty
    text; judged by it, the second was a duplicate of the first and its frames
    were never fetched. Judged by their bytes, every page's links are followed."""
    seed, server = empty_text_site
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 frames.test\n")
    result = run_web_crawl(tmp_path / "crawl", seed, settings={"DNS_HOSTS": hosts, "DOWNLOAD_DELAY": 0})
    assert result.returncode == 0, result.log[-2000:]
    items = items_by_url(result)
    base = seed.rsplit("/", 1)[0]
    empty = [f"{base}/{name}" for name in ("a.html", "b.html", "c.html")]
    assert [items[url].get("duplicate_of") for url in empty] == [None, None, None]
    assert len({items[url]["fingerprint"] for url in empty}) == 3
    served = set(server.served)
    assert {f"/{page}.html" for page in ("a1", "a2", "b1", "b2", "c1")} <= served
    assert result.stats.get("contentseen/empty_text") == 3
