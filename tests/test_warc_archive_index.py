"""Which record a download becomes (the pure policy, with numbers), and the
archive index it is decided on: one behaviour suite over the SQLite file and
Redis (single and Cluster), with reopen variants; two crawl processes on one
Redis prefix share it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from extensions.backends import crawl_backend
from extensions.output.archive import SqliteArchiveIndex
from extensions.output.dedup import (
    PROFILE_IDENTICAL,
    Capture,
    RecordKind,
    lookups_needed,
    record_kind,
    revisit_overhead,
)
from extensions.backends.redis.archive import ArchiveKeys, RedisArchiveIndex
from extensions.backends.redis.connection import RedisConnection
from tests._sup_spiders import FOLLOW_SPIDER, follow_args
from testweb.crawlrun import run_spider
from testweb.localserver import LocalWeb, page_body
from testweb.redisserver import unique_prefix

ORIGINAL = Capture("http://a.test/x", "2024-01-02T03:04:05.000006Z", "<urn:uuid:1>", "sha1:AAAA")


# -- the policy -------------------------------------------------------------------------

def test_revisit_overhead_counts_the_header_lines_a_revisit_adds() -> None:
    expected = sum(len(line) + 2 for line in (
        f"WARC-Profile: {PROFILE_IDENTICAL}", "WARC-Refers-To-Target-URI: http://a.test/x",
        "WARC-Refers-To-Date: 2024-01-02T03:04:05.000006Z", "WARC-Refers-To: <urn:uuid:1>"))
    assert revisit_overhead(RecordKind.IDENTICAL, ORIGINAL) == expected == 204
    unknown_id = Capture(ORIGINAL.uri, ORIGINAL.date, None, ORIGINAL.digest)
    assert revisit_overhead(RecordKind.IDENTICAL, unknown_id) == expected - len("WARC-Refers-To: <urn:uuid:1>\r\n")


def test_a_known_payload_is_a_revisit_only_when_that_saves_bytes() -> None:
    assert record_kind(200, 205, ORIGINAL, None) == (RecordKind.IDENTICAL, ORIGINAL)
    assert record_kind(200, 204, ORIGINAL, None) == (RecordKind.RESPONSE, None)
    assert record_kind(404, 5000, ORIGINAL, None) == (RecordKind.IDENTICAL, ORIGINAL)  # any status
    assert record_kind(200, 5000, None, ORIGINAL) == (RecordKind.RESPONSE, None)  # same URI, new payload


def test_a_304_is_a_not_modified_revisit_of_the_stored_capture_when_there_is_one() -> None:
    assert record_kind(304, 0, None, ORIGINAL) == (RecordKind.NOT_MODIFIED, ORIGINAL)
    assert record_kind(304, 0, None, None) == (RecordKind.RESPONSE, None)


def test_look_ups_are_asked_only_where_a_revisit_can_follow() -> None:
    assert lookups_needed(200, 1) == (True, False)
    assert lookups_needed(200, 0) == (False, False)  # nothing to save
    assert lookups_needed(304, 0) == (False, True)


# -- the archive index, over every store ------------------------------------------------

Factory = Callable[[], Any]


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """A factory of archive indexes over one store: each call opens it anew
    (after the previous one was closed, as the next crawl would)."""
    opened: list[Any] = []
    if request.param == "sqlite":
        def make() -> Any:
            opened.append(SqliteArchiveIndex(tmp_path / "warc-archive.sqlite3"))
            return opened[-1]
    else:
        server = request.getfixturevalue("redis_server" if request.param == "redis" else "redis_cluster")
        prefix = unique_prefix()

        def make() -> Any:
            opened.append(RedisArchiveIndex(RedisConnection(server.url), prefix))
            return opened[-1]
    yield make
    for index in opened:
        index.close()


def test_unknown_keys_find_nothing(reopen: Factory) -> None:
    index = reopen()
    assert index.find("sha1:NOPE", "http://a.test/none") == (None, None)
    assert index.find(None, None) == (None, None)


def test_the_first_record_of_a_payload_stays_its_original(reopen: Factory) -> None:
    index = reopen()
    later = Capture("https://a.test/x", "2024-01-02T03:05:00Z", "<urn:uuid:2>", ORIGINAL.digest)
    index.add(ORIGINAL, original=True, latest=True)
    index.add(later, original=True, latest=True)
    assert index.find(ORIGINAL.digest, None) == (ORIGINAL, None)
    assert index.find(None, later.uri) == (None, later)


def test_the_latest_capture_of_a_uri_replaces_the_earlier(reopen: Factory) -> None:
    index = reopen()
    changed = Capture(ORIGINAL.uri, "2024-02-01T00:00:00Z", "<urn:uuid:3>", "sha1:BBBB")
    index.add(ORIGINAL, original=True, latest=True)
    index.add(changed, original=True, latest=True)
    assert index.find("sha1:BBBB", ORIGINAL.uri) == (changed, changed)
    assert index.find(ORIGINAL.digest, None) == (ORIGINAL, None)


def test_a_capture_without_its_payload_is_no_original(reopen: Factory) -> None:
    index = reopen()
    index.add(ORIGINAL, original=False, latest=True)
    assert index.find(ORIGINAL.digest, ORIGINAL.uri) == (None, ORIGINAL)


def test_an_unknown_record_id_stays_unknown(reopen: Factory) -> None:
    index = reopen()
    anonymous = Capture("http://a.test/y", ORIGINAL.date, None, "sha1:CCCC")
    index.add(anonymous, original=True, latest=True)
    assert index.find("sha1:CCCC", "http://a.test/y") == (anonymous, anonymous)


def test_what_was_added_is_found_after_reopening(reopen: Factory) -> None:
    first = reopen()
    first.add(ORIGINAL, original=True, latest=True)
    first.close()
    assert reopen().find(ORIGINAL.digest, ORIGINAL.uri) == (ORIGINAL, ORIGINAL)


def test_sqlite_additions_are_committed_at_once_a_kill_loses_none(tmp_path: Path) -> None:
    """Each addition is its own transaction: another connection (a process
    reading after this one was killed) sees it before any close."""
    index = SqliteArchiveIndex(tmp_path / "warc-archive.sqlite3")
    index.add(ORIGINAL, original=True, latest=True)
    try:
        other = SqliteArchiveIndex(tmp_path / "warc-archive.sqlite3")
        assert other.find(ORIGINAL.digest, ORIGINAL.uri) == (ORIGINAL, ORIGINAL)
        other.close()
    finally:
        index.close()


def test_the_backend_follows_frontier_backend(tmp_path: Path, redis_server: Any) -> None:
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    local = crawl_backend(get_crawler(settings_dict={"JOBDIR": str(tmp_path)})).archive_index()
    shared = crawl_backend(get_crawler(settings_dict={
        "FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url, "FRONTIER_REDIS_PREFIX": unique_prefix()})).archive_index()
    try:
        assert isinstance(local, SqliteArchiveIndex) and (tmp_path / "warc-archive.sqlite3").exists()
        assert isinstance(shared, RedisArchiveIndex)
    finally:
        local.close()
        shared.close()


def test_redis_keys_sit_in_the_crawls_tagged_key_space(redis_server: Any) -> None:
    prefix = unique_prefix()
    keys = ArchiveKeys(prefix)
    assert keys.digests("sha1:ab7CDE") == f"{prefix}:{{archive-AB}}:digests"
    assert keys.captures("http://Www.A.test:8080/x").startswith(f"{prefix}:{{")
    assert keys.captures("http://www.a.test/x") == keys.captures("https://www.a.test:443/y")
    index = RedisArchiveIndex(RedisConnection(redis_server.url), prefix)
    index.add(ORIGINAL, original=True, latest=True)
    index.close()  # the buffered additions go with the last user
    connection = RedisConnection(redis_server.url).attach("test")
    try:
        assert sorted(key.decode() for key in connection.scan(f"{prefix}:*")) == sorted(
            [keys.digests(ORIGINAL.digest), keys.captures(ORIGINAL.uri)])
    finally:
        connection.detach()


# -- two crawl processes on one Redis prefix ----------------------------------------------

def answers(directory: Path) -> dict[str, Any]:
    found = {}
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] = record.rec_headers
    return found


def test_a_second_process_on_the_same_redis_prefix_archives_revisits_of_the_firsts_records(
        tmp_path: Path, redis_server: Any) -> None:
    common = {"EXTENSIONS": {"extensions.output.warc.WarcWriter": 500}, "FRONTIER_BACKEND": "redis",
              "REDIS_URL": redis_server.url, "FRONTIER_REDIS_PREFIX": unique_prefix()}
    with LocalWeb(pages=3) as web:
        first = run_spider(tmp_path / "one", FOLLOW_SPIDER, follow_args(web.url("/page/0")),
                           {**common, "WARC_DIR": str(tmp_path / "one" / "warcs")})
        second = run_spider(tmp_path / "two", FOLLOW_SPIDER, follow_args(web.url("/page/0?again")),
                            {**common, "WARC_DIR": str(tmp_path / "two" / "warcs")})
    assert first.returncode == 0 and second.returncode == 0, first.log + second.log
    originals = answers(tmp_path / "one" / "warcs")
    copies = answers(tmp_path / "two" / "warcs")
    assert {h.get_header("WARC-Type") for h in originals.values()} == {"response"}
    assert len(copies) == 3 and {h.get_header("WARC-Type") for h in copies.values()} == {"revisit"}
    for headers in copies.values():
        original = originals[headers.get_header("WARC-Refers-To-Target-URI")]
        assert headers.get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")
        assert headers.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
    assert second.dumped_stat("warc/revisit/payload_bytes_saved") == sum(
        len(page_body(number, 3)) for number in range(3))
