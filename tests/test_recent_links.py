"""The spider's cache of recently yielded links (a URL-seen test before Scrapy)."""

from __future__ import annotations

import tracemalloc

import pytest

from extensions.urls.recent import RecentLinks, TwoGenerationCache


def test_a_link_passed_on_is_held_back_at_the_same_or_greater_depth() -> None:
    recent = RecentLinks(10)
    assert recent.fresh("http://a.test/", 3)
    assert not recent.fresh("http://a.test/", 3)
    assert not recent.fresh("http://a.test/", 5)


def test_a_link_seen_deeper_passes_again_when_found_closer_to_the_seeds() -> None:
    recent = RecentLinks(10)
    assert recent.fresh("http://a.test/x", 9)
    assert recent.fresh("http://a.test/x", 2)
    assert not recent.fresh("http://a.test/x", 4)


def test_the_cache_is_bounded_and_forgets_the_least_recently_used() -> None:
    recent = RecentLinks(2)
    recent.fresh("http://a.test/1", 1)
    recent.fresh("http://a.test/2", 1)
    assert not recent.fresh("http://a.test/1", 1)  # touches 1: 2 is now oldest
    recent.fresh("http://a.test/3", 1)
    assert len(recent) == 2
    assert recent.fresh("http://a.test/2", 1)  # forgotten, so passed on again
    assert recent.fresh("http://a.test/1", 1)  # evicted when 2 came back


def test_size_zero_passes_everything() -> None:
    recent = RecentLinks(0)
    assert recent.fresh("http://a.test/", 1) and recent.fresh("http://a.test/", 1)


def test_negative_size_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="LINKS_RECENT_CACHE_SIZE"):
        RecentLinks(-1)


def test_a_recent_link_is_held_back_for_at_least_half_the_size_of_newer_links() -> None:
    recent = RecentLinks(1000)
    assert recent.fresh("http://a.test/kept", 1)
    for number in range(500):
        assert recent.fresh(f"http://b.test/{number}", 1)
    assert not recent.fresh("http://a.test/kept", 1)
    assert len(recent) <= 1000


@pytest.mark.parametrize("capacity", [1, 2, 3, 100])
def test_the_cache_holds_at_most_its_capacity_and_counts_what_it_forgets(capacity: int) -> None:
    cache = TwoGenerationCache(capacity)
    for key in range(1000):
        cache.add(key)
        assert len(cache) <= capacity
        kept = range(max(0, key - capacity // 2 + 1), key + 1)  # the key and fewer than capacity // 2 before it
        assert all(earlier in cache for earlier in kept), (key, len(cache))
    assert cache.evictions == 1000 - len(cache)
    assert not cache.hit(0) and cache.hit(999)


def test_a_key_in_use_stays_however_many_keys_come_after_it() -> None:
    cache = TwoGenerationCache(10)
    cache.add("popular", 7)
    for key in range(1000):
        cache.add(key)
        assert cache.get("popular") == 7


def test_a_fingerprint_cache_costs_under_60_bytes_a_key_beside_the_key_itself() -> None:
    """The URL-seen cache's 65,536 fingerprints (an OrderedDict LRU took 88 bytes a key)."""
    fingerprints = [(number * 0x9E3779B97F4A7C15) % (1 << 64) - (1 << 63) for number in range(65536)]
    tracemalloc.start()
    try:
        cache = TwoGenerationCache(65536)
        for fingerprint in fingerprints:
            cache.add(fingerprint)
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(cache) >= 32768
    assert size / len(cache) < 60, size / len(cache)
