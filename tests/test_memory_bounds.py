"""Memory that must not grow with the crawl: each structure stays at its bound
however many URLs, hosts or pages pass through it."""

from __future__ import annotations

import ctypes
import random
import tracemalloc
from pathlib import Path

import _sqlite3

from extensions import defaults
from extensions.backends.sqlite.store import SQLiteStore
from extensions.frontier.store import Entry

MB = 1 << 20


def sqlite_heap() -> int:
    """Bytes SQLite's allocator holds now (every connection of this process)."""
    used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    used.restype = ctypes.c_int64
    return used()


def test_frontier_sqlite_heap_stays_at_its_default_cache_as_urls_grow(tmp_path: Path) -> None:
    """A URL database of more than 48 MB costs the process SQLite's page
    cache (FRONTIER_SQLITE_CACHE_MB), under 16 MB, not the file's size."""
    before = sqlite_heap()
    store = SQLiteStore(tmp_path / "frontier.sqlite3", cache_mb=defaults.FRONTIER_SQLITE_CACHE_MB)
    store.open()
    rng = random.Random(7)
    try:
        for batch in range(100):
            entries = [Entry(rng.getrandbits(63), f"http://h{n % 977}.example/some/path/{batch}/{n}",
                             f"h{n % 977}.example") for n in range(5000)]
            store.urls.insert_new(entries, 0.0)
            store.checkpoint()
        grown = sqlite_heap() - before
        size = (tmp_path / "frontier.sqlite3").stat().st_size + (tmp_path / "frontier.sqlite3-wal").stat().st_size
    finally:
        store.close()
    assert size > 48 * MB
    assert grown < 16 * MB, f"SQLite heap grew {grown / MB:.1f} MB over a {size / MB:.0f} MB file"


def test_exact_content_seen_memory_stays_at_a_few_megabytes(tmp_path: Path) -> None:
    """100,000 distinct pages: the exact content-seen set keeps its default
    LRU of CONTENTSEEN_MEMORY_ENTRIES fingerprints with their first URLs,
    under 5 MB of Python objects; the rest is in its file."""
    from extensions.contentseen.exact import ContentSeen  # noqa: PLC0415

    rng = random.Random(3)
    with ContentSeen.open(tmp_path / "contentseen.sqlite3",
                          memory_entries=defaults.CONTENTSEEN_MEMORY_ENTRIES) as seen:
        tracemalloc.start()
        try:
            for n in range(100_000):
                seen.add_or_get(rng.getrandbits(64), f"http://host{n % 2000}.example/a/page/{n}.html")
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(seen.memory) + len(seen.pending) <= defaults.CONTENTSEEN_MEMORY_ENTRIES + seen.batch_size
    assert held < 5 * MB, f"{held / MB:.1f} MB"


def test_robots_middleware_forgets_origins_once_they_answer(tmp_path: Path) -> None:
    """20,000 origins whose robots.txt failed once, then answered with a
    sitemap each: no failure reason is kept, and the announced sitemaps and
    log-once origins stay at their bound."""
    import asyncio  # noqa: PLC0415

    from scrapy import Spider  # noqa: PLC0415
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.robots import middleware  # noqa: PLC0415
    from extensions.robots.rules import RobotsRules  # noqa: PLC0415

    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_SITEMAP_SEEDS": False})
    crawler.spider = Spider("bounds")
    robots = middleware.RobotsMiddleware(crawler)
    count = 2 * middleware.REMEMBERED_LIMIT

    async def every_origin() -> None:
        for n in range(count):
            origin = f"http://h{n}.example"
            robots._unreachable(origin, None, "connection refused")
            robots._log_once(origin, "test %s", origin)
            rules = RobotsRules.parse(f"User-agent: *\nDisallow: /x\nSitemap: {origin}/s.xml\n",
                                      robots.token, 1e12)
            await robots._apply(origin, rules)

    asyncio.run(every_origin())
    assert robots.unreachable_reasons == {}
    assert len(robots.sitemaps) <= middleware.REMEMBERED_LIMIT
    assert len(robots._logged) <= middleware.REMEMBERED_LIMIT
    assert crawler.stats.get_value("robotstxt/sitemaps") == count


def test_circuit_breaker_keeps_only_failing_origins_up_to_its_bound() -> None:
    """50,000 origins failing once (their breakers never open) keep at most
    ORIGINS_KEPT states; a deferred origin's state is dropped."""
    from extensions.breaker import ORIGINS_KEPT, CircuitBreaker  # noqa: PLC0415

    breaker = CircuitBreaker(failures=3, retry_delay=10.0, max_delay=60.0, retry_times=1)
    for n in range(50_000):
        assert breaker.failed(f"http://h{n}.example", float(n)) == ("counted", 0.0)
    assert len(breaker.origins) <= ORIGINS_KEPT
    verdicts = [breaker.failed("http://dead.example", 1e6 + 100.0 * n)[0] for n in range(5)]
    assert verdicts == ["counted", "counted", "open", "open", "deferred"]
    assert "http://dead.example" not in breaker.origins
