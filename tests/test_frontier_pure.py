"""Pure frontier policy, tested with numbers: host heap, politeness
arithmetic, the biased front-queue selector, the prioritiser, fingerprints."""

from __future__ import annotations

from collections import Counter

import pytest

from extensions.frontier.fingerprint import (
    URL_BITS,
    fingerprint,
    host_hash,
    url_fingerprint,
)
from extensions.frontier.queues import BiasedSelector
from extensions.frontier.hostheap import HostHeap
from extensions.frontier.politeness import INFINITY, Politeness, politeness_gap
from extensions.frontier.prioritizer import DepthPrioritizer


def host_of_fingerprint(fp: int) -> int:
    """The host hash part of a fingerprint."""
    return ((fp + (1 << 64)) % (1 << 64)) >> URL_BITS


# -- host heap ---------------------------------------------------------------
def test_host_heap_pops_earliest_due_host_only():
    heap = HostHeap()
    heap.schedule("b.test", 2.0)
    heap.schedule("a.test", 1.0)
    heap.schedule("c.test", 3.0)
    assert heap.pop_due(0.5) is None
    assert heap.next_time() == 1.0
    assert heap.pop_due(2.5) == "a.test"
    assert heap.pop_due(2.5) == "b.test"
    assert heap.pop_due(2.5) is None
    assert len(heap) == 1


def test_host_heap_ties_break_by_insertion_order_without_comparing_hosts():
    heap = HostHeap()
    for host in ["z.test", "a.test", "m.test"]:
        heap.schedule(host, 1.0)
    assert [heap.pop_due(1.0) for _ in range(3)] == ["z.test", "a.test", "m.test"]


def test_host_heap_reschedule_replaces_and_remove_forgets():
    heap = HostHeap()
    heap.schedule("a.test", 5.0)
    heap.schedule("a.test", 1.0)
    heap.schedule("b.test", 2.0)
    heap.remove("b.test")
    assert len(heap) == 1 and "b.test" not in heap
    assert heap.next_time() == 1.0
    assert heap.pop_due(10.0) == "a.test"
    assert heap.pop_due(10.0) is None
    assert heap.next_time() is None


def test_host_heap_compacts_stale_entries():
    heap = HostHeap()
    for i in range(10_000):
        heap.schedule("a.test", float(i))
    assert len(heap._heap) < 200
    assert heap.pop_due(1e9) == "a.test"


# -- politeness --------------------------------------------------------------
def test_gap_is_the_largest_of_delay_crawl_delay_and_factor_times_duration():
    assert politeness_gap(0.2, None, 0.0, 5.0) == 0.2
    assert politeness_gap(0.2, 3.0, 0.0, 5.0) == 3.0
    assert politeness_gap(0.2, 3.0, 10.0, 0.5) == 5.0
    assert politeness_gap(0.0, None, 0.0, 1.0) == 0.0


def test_next_fetch_waits_for_end_of_previous_plus_gap():
    politeness = Politeness(delay=1.0, factor=2.0)
    assert politeness.ready_at("a.test") == 0.0
    politeness.started("a.test", 10.0)
    assert politeness.ready_at("a.test") == INFINITY  # limit 1 in flight
    politeness.finished("a.test", end=12.0, duration=2.0)
    assert politeness.ready_at("a.test") == 12.0 + 4.0  # factor x 2 s > 1 s delay


def test_crawl_delay_raises_the_gap_and_pushes_a_computed_time():
    politeness = Politeness(delay=0.5)
    politeness.started("a.test", 0.0)
    politeness.finished("a.test", end=1.0, duration=0.1)
    assert politeness.ready_at("a.test") == 1.5
    politeness.set_crawl_delay("a.test", 3.0)
    assert politeness.ready_at("a.test") == 4.0
    politeness.set_crawl_delay("a.test", None)
    assert politeness.gap("a.test", 0.1) == 0.5


def test_concurrency_limit_and_download_slots_override():
    politeness = Politeness(concurrency=2, slots={"slow.test": {"concurrency": 1, "delay": 7}})
    politeness.started("a.test", 0.0)
    assert politeness.ready_at("a.test") == 0.0
    politeness.started("a.test", 0.0)
    assert politeness.ready_at("a.test") == INFINITY
    politeness.started("slow.test", 0.0)
    assert politeness.ready_at("slow.test") == INFINITY
    politeness.finished("slow.test", 1.0, 0.1)
    assert politeness.ready_at("slow.test") == 8.0


def test_prune_forgets_idle_hosts_only():
    politeness = Politeness(delay=1.0)
    for host in ["a", "b", "c"]:
        politeness.started(host, 0.0)
    politeness.finished("a", 1.0, 0.1)  # next allowed 2.0
    politeness.finished("b", 1.0, 0.1)
    assert politeness.prune(5.0, keep={"b"}) == 1
    assert set(politeness.hosts) == {"b", "c"}


def test_a_host_is_rate_limited_when_its_own_gap_exceeds_the_common_delay():
    politeness = Politeness(delay=0.5, factor=2.0, slots={"slot.test": {"delay": 3.0},
                                                          "fast.test": {"delay": 0.0}})
    assert not politeness.rate_limited("a.test")  # the common delay only
    politeness.set_crawl_delay("a.test", 0.5)
    assert not politeness.rate_limited("a.test")  # not longer than the common delay
    politeness.set_crawl_delay("a.test", 2.0)
    assert politeness.rate_limited("a.test")
    assert politeness.rate_limited("slot.test")  # DOWNLOAD_SLOTS delay
    assert not politeness.rate_limited("fast.test")
    politeness.started("b.test", 0.0)
    politeness.finished("b.test", end=1.0, duration=1.0)  # 2 x 1 s > 0.5 s
    assert politeness.rate_limited("b.test")


# -- the biased selector -----------------------------------------------------
def test_selector_serves_levels_in_proportion_to_weights():
    selector = BiasedSelector.linear(4)  # weights 1, 2, 3, 4
    picks = Counter(selector.select([True] * 4) for _ in range(1000))
    assert picks == {0: 100, 1: 200, 2: 300, 3: 400}


def test_selector_starves_no_level_and_is_deterministic():
    first = [BiasedSelector.linear(8).select([True] * 8) for _ in range(1)]
    selector = BiasedSelector.linear(8)
    window = [selector.select([True] * 8) for _ in range(36)]  # one full round
    assert set(window) == set(range(8))
    assert first == [window[0]] == [7]


def test_selector_skips_empty_queues_and_returns_none_when_all_empty():
    selector = BiasedSelector([1, 5])
    assert [selector.select([True, False]) for _ in range(3)] == [0, 0, 0]
    assert selector.select([False, False]) is None


def test_selector_rejects_non_positive_weights():
    with pytest.raises(ValueError, match="weights"):
        BiasedSelector([1, 0])


# -- the prioritiser ---------------------------------------------------------
def test_depth_prioritizer_puts_seeds_on_top_and_deep_urls_low():
    prioritizer = DepthPrioritizer(levels=8)
    assert prioritizer.level(0, 0, {}) == 7
    assert prioritizer.level(0, 3, {}) == 4
    assert prioritizer.level(0, 50, {}) == 0
    assert prioritizer.level(2, 3, {}) == 6  # a redirect's +2
    assert prioritizer.level(100, 0, {}) == 7


def test_depth_prioritizer_steps():
    prioritizer = DepthPrioritizer(levels=4, depth_step=2, priority_step=10)
    assert [prioritizer.level(0, d, {}) for d in range(8)] == [3, 3, 2, 2, 1, 1, 0, 0]
    assert prioritizer.level(10, 6, {}) == 1


# -- fingerprints ------------------------------------------------------------
def test_fingerprint_high_bits_come_from_the_host():
    fp_a1, host = url_fingerprint("http://Example.COM/a?y=2&x=1")
    fp_a2, _ = url_fingerprint("http://example.com/b")
    assert host == "example.com"
    assert host_of_fingerprint(fp_a1) == host_of_fingerprint(fp_a2) == host_hash("example.com")
    assert fp_a1 != fp_a2
    assert -(1 << 63) <= fp_a1 < (1 << 63)


def test_fingerprint_of_canonical_equivalents_is_equal():
    assert url_fingerprint("http://example.com/a?y=2&x=1")[0] == url_fingerprint("http://example.com/a?x=1&y=2")[0]
    assert url_fingerprint("http://example.com/a")[0] != url_fingerprint("http://example.com/a", "POST")[0]


def test_fingerprint_is_signed_64_bit():
    value = fingerprint("http://x.test/", "x.test")
    assert (value + (1 << 64)) % (1 << 64) >> URL_BITS == host_hash("x.test")


@pytest.mark.parametrize("url", [
    "http://a.test/", "http://h0001.test:8080/p/1.html", "https://a.test/s?a=1&b=2",
    "http://xn--bcher-kva.test/%C3%A4?q=%20", "http://[::1]:81/x",
])
def test_canonical_fingerprint_equals_url_fingerprint_for_canonical_urls(url: str) -> None:
    from extensions.frontier.fingerprint import canonical_fingerprint, url_fingerprint  # noqa: PLC0415
    from extensions.urls.canonical import canonicalize  # noqa: PLC0415

    canonical = canonicalize(url)
    assert canonical_fingerprint(canonical) == url_fingerprint(url)[0]
