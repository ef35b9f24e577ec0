"""Seeds pushed to running crawler processes through Redis
(extensions/backends/redis/seeds.py), end to end: real ``scrapy crawl web``
subprocesses started without ``-a seeds``, a real redis-server, the
synthetic test web; the seeds are pushed only once every process runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.utils.test import get_crawler

from crawler.spiders.web import WebSpider
from extensions.backends.redis.seeds import RedisSeeds, parse_entry
from testweb.crawlrun import run_web_crawl
from testweb.redisserver import RedisServer, unique_prefix
from tests.test_distributed import (
    WAITING,
    assert_ground_truth,
    assert_polite,
    crawl_settings,
    crawlers,
    wait_all,
    wait_for_log,
)

WEB = {"hosts": 12, "pages": 6, "links": 4, "seed": 5}


def test_an_entry_is_a_url_or_a_json_object_with_url_and_meta() -> None:
    assert parse_entry(b" http://a.test/x \n") == ("http://a.test/x", {})
    assert parse_entry('{"url": "http://a.test/", "meta": {"k": 1}}') == ("http://a.test/", {"k": 1})
    for bad in (b"", b"   ", b"{not json", b'{"meta": {}}', b'{"url": 3}', b'{"url": "http://a.test/", "meta": []}'):
        with pytest.raises(ValueError):
            parse_entry(bad)


def test_a_redis_error_while_pulling_is_counted_and_the_crawl_goes_on(tmp_path: Path) -> None:
    """The client's error (redis' RedisError once its retries are spent) is
    caught on the Redis path, which alone imports redis: no seeds this time,
    ``seeds/redis_errors`` counted."""
    server = RedisServer(tmp_path / "redis")
    try:
        crawler = get_crawler(WebSpider, {"FRONTIER_BACKEND": "redis", "REDIS_URL": server.url,
                                          "FRONTIER_REDIS_PREFIX": unique_prefix(), "FRONTIER_REDIS_RETRIES": 0})
        crawler.spider = WebSpider()
        seeds = RedisSeeds.from_crawler(crawler)
    finally:
        server.stop()
    try:
        assert seeds.pull() == 0
        assert crawler.stats.get_value("seeds/redis_errors") == 1
    finally:
        seeds.spider_closed()


@pytest.mark.parametrize("as_set", [False, True], ids=["list", "set"])
def test_seeds_pushed_to_waiting_processes_are_crawled_to_the_ground_truth(
    tmp_path: Path, start_web: Any, redis_server: RedisServer, as_set: bool,
) -> None:
    web = start_web(**WEB)
    prefix = unique_prefix()
    key = f"{prefix}:start_urls"
    settings = crawl_settings(web, redis_server.url, prefix, REDIS_START_URLS_KEY=key,
                              REDIS_START_URLS_AS_SET=as_set, MAX_IDLE_TIME_BEFORE_CLOSE=2,
                              REDIS_START_URLS_POLL_INTERVAL=0.2)
    seeds = [line for line in web.seeds_file.read_text().split() if line]
    entries = [*seeds[1:], json.dumps({"url": seeds[0], "meta": {"pushed": "yes"}}), "not a url", "ftp://a.test/"]
    client = redis.Redis.from_url(redis_server.url)
    with crawlers(tmp_path, "", settings, 2) as procs:
        wait_for_log([tmp_path / f"crawl{i}" / "crawl.log" for i in range(2)], WAITING, procs)
        (client.sadd if as_set else client.lpush)(key, *entries)
        results = wait_all(procs, tmp_path)
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
    total = {name: sum(r.stats.get(f"seeds/redis_{name}", 0) for r in results)
             for name in ("accepted", "invalid", "filtered")}
    assert total == {"accepted": len(seeds), "invalid": 1, "filtered": 1}
    assert client.exists(key) == 0
    assert_ground_truth(web)
    assert assert_polite(web.entries(), web.crawl_delays()) > 20
    client.close()


def test_without_seeds_and_without_redis_the_crawl_stops_at_start_saying_how(tmp_path: Path) -> None:
    result = run_web_crawl(tmp_path, "")
    assert result.returncode != 0
    assert "seeds: missing" in result.log + (tmp_path / "stdout.txt").read_text(errors="replace")


def test_a_crawl_with_seeds_ends_when_done_and_takes_pushed_seeds_while_it_runs(
    tmp_path: Path, start_web: Any, redis_server: RedisServer,
) -> None:
    """``-a seeds`` with one seed; the others were pushed before the start
    (the key persists), so the crawl reaches every host and then ends by
    itself (MAX_IDLE_TIME_BEFORE_CLOSE 0)."""
    web = start_web(**WEB)
    prefix = unique_prefix()
    key = f"{prefix}:start_urls"
    seeds = [line for line in web.seeds_file.read_text().split() if line]
    client = redis.Redis.from_url(redis_server.url)
    client.rpush(key, *seeds[1:])
    settings = crawl_settings(web, redis_server.url, prefix, REDIS_START_URLS_KEY=key)
    result = run_web_crawl(tmp_path / "crawl", seeds[0], settings, timeout=180)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats.get("seeds/accepted") == 1
    assert result.stats.get("seeds/redis_accepted") == len(seeds) - 1
    assert_ground_truth(web)
    client.close()
