"""The content-seen pipeline in real crawls: verdicts recorded in the URL
database and surviving a resume (``scrapy crawl web`` as a subprocess)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testweb.crawlrun import run_web_crawl
from testweb.localserver import NOT_FOUND, LocalServer, Reply, Request, Responder


def items_by_url(result: Any) -> dict[str, dict[str, Any]]:
    return {item["url"]: item for item in result.items}


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
    assert items[copy]["duplicate_of"] == original
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
