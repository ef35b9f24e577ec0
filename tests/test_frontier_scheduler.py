"""The frontier driven directly (no engine): URL-seen, politeness, back
queues, refill, crawl-delay, the wake-up timer, fetch-end signals, codec."""

from __future__ import annotations


import pytest
from scrapy import Request, Spider
from scrapy.http import FormRequest, HtmlResponse, Response
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from extensions.frontier.codec import decode, encode
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.politeness import Politeness
from extensions.frontier.scheduler import Frontier
from extensions.frontier.store import FLAG_BLOB, FLAG_MEMORY, Status
from tests.conformance import vectors
from tests.test_frontier_support import (
    STORES,
    Wakes,
    drain,
    local_only,
    make_frontier,
    make_store,
    shared,
    urls,
)


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    return make_store(request.param, tmp_path)


def test_duplicate_urls_are_dropped_and_counted(store):
    clock = Clock()
    frontier = make_frontier(store, clock)
    assert frontier.enqueue_request(Request("http://a.test/x?b=1&a=2"))
    assert not frontier.enqueue_request(Request("http://a.test/x?a=2&b=1"))  # canonical twin
    assert not frontier.enqueue_request(Request("http://a.test/x?b=1&a=2"))
    assert frontier.stats.get_value("frontier/duplicates") == 2
    assert frontier.stats.get_value("frontier/enqueued") == 1
    assert frontier.stats.get_value("frontier/seen_cache_hit") == 2
    if not shared(store):  # the shared dispatch counts a host's URLs once it holds the host
        assert len(frontier) == 1
    frontier.checkpoint()
    assert frontier.stats.get_value("frontier/seen_cache_hit_rate") == round(2 / 3, 4)
    assert [url for _, url in drain(frontier, clock)] == ["http://a.test/x?b=1&a=2"]


def test_duplicates_are_found_on_disk_when_the_cache_is_cold(store):
    frontier = make_frontier(store, seen_cache_size=0)
    assert frontier.enqueue_request(Request("http://a.test/1"))
    assert not frontier.enqueue_request(Request("http://a.test/1"))
    assert frontier.stats.get_value("frontier/seen_cache_miss") == 2


def test_dont_filter_bypasses_url_seen(store):
    clock = Clock()
    frontier = make_frontier(store, clock)
    frontier.enqueue_request(Request("http://a.test/1"))
    assert frontier.enqueue_request(Request("http://a.test/1", dont_filter=True))
    assert [url for _, url in drain(frontier, clock)] == ["http://a.test/1"] * 2


def test_second_request_to_host_waits_for_end_of_fetch_plus_delay(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=2.0))
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    first = frontier.next_request()
    clock.advance(3.0)  # the fetch takes 3 s
    assert frontier.next_request() is None  # still in flight
    frontier.fetch_finished(first, duration=3.0)
    clock.advance(1.99)
    assert frontier.next_request() is None
    clock.advance(0.01)
    assert frontier.next_request().url == "http://a.test/1"
    assert clock.seconds() == pytest.approx(5.0)


def test_politeness_factor_scales_with_last_download_time(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=0.1, factor=10))
    for request in urls("a.test", 3):
        frontier.enqueue_request(request)
    starts = [t for t, _ in drain(frontier, clock, duration=0.5, step=0.25)]
    assert starts == pytest.approx([0.0, 5.5, 11.0])  # end + 10 x 0.5 s


def test_among_ready_hosts_the_higher_level_goes_first_but_a_crawl_delay_host_at_once():
    """Hosts ready together go by their head URL's level (AOPIC order
    across hosts), except a host slowed by its own Crawl-delay: it can take
    only one fetch per delay, and one it waits for it never catches up."""
    def first_hosts(crawl_delay: float | None) -> list[str]:
        clock = Clock()
        frontier = make_frontier(make_store("memory", None), clock, back_queues=8,
                                 politeness=Politeness(delay=0.0))
        frontier.set_crawl_delay("slow.test", crawl_delay)
        frontier.enqueue_request(Request("http://slow.test/deep", priority=-3))
        for host in ("a.test", "b.test", "c.test", "d.test"):
            for request in urls(host, 3):
                frontier.enqueue_request(request)
        order = []
        for _ in range(3):  # three fetches, all hosts ready at once
            request = frontier.next_request()
            order.append(request.url.split("/")[2])
        return order

    assert "slow.test" not in first_hosts(None)  # level 4 waits for the level-7 URLs
    assert first_hosts(2.0)[0] == "slow.test"


def test_per_host_in_flight_limit(store):
    frontier = make_frontier(store, politeness=Politeness(concurrency=2))
    for request in urls("a.test", 5):
        frontier.enqueue_request(request)
    first, second = frontier.next_request(), frontier.next_request()
    assert first and second
    assert frontier.next_request() is None
    frontier.fetch_finished(first)
    assert frontier.next_request().url == "http://a.test/2"
    assert frontier.next_request() is None


def test_other_hosts_proceed_while_one_waits(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=10.0))
    for host in ["a.test", "b.test", "c.test"]:
        for request in urls(host, 2):
            frontier.enqueue_request(request)
    got = []
    while (request := frontier.next_request()) is not None:
        got.append(request.url)
        frontier.fetch_finished(request)
    assert sorted(got) == ["http://a.test/0", "http://b.test/0", "http://c.test/0"]


def test_back_queues_never_mix_hosts_and_are_bounded(store):
    local_only(store, "reads the local back queues")
    frontier = make_frontier(store, back_queues=3, queue_buffer=2)
    for i in range(60):
        frontier.enqueue_request(Request(f"http://h{i % 7}.test/{i}"))
    frontier.next_request()
    assert frontier.dispatch.back.in_use() <= 3
    owners = {index: host for host, index in frontier.dispatch.back.queue_of.items()}
    for index, queue in enumerate(frontier.dispatch.back.queues):
        hosts = {entry.host for entry in list(queue.head) + queue.tail}
        assert hosts <= {owners.get(index)}


def test_refill_follows_the_textbook_rule(store):
    local_only(store, "Mercator's refill of local back queues from front queues")
    frontier = make_frontier(store, back_queues=2, front_queues=1)
    for url in ["http://a.test/1", "http://a.test/2", "http://b.test/1", "http://c.test/1"]:
        frontier.enqueue_request(Request(url))
    frontier.dispatch._refill()
    assert frontier.dispatch.back.queue_of == {"a.test": 0, "b.test": 1}
    assert [len(queue) for queue in frontier.dispatch.back.queues] == [2, 1]
    assert len(frontier.dispatch.front) == 1  # c.test waits for a free back queue
    got = [frontier.next_request().url for _ in range(2)]
    assert got == ["http://a.test/1", "http://b.test/1"]
    assert frontier.dispatch.back.queue_of["c.test"] == 1  # b's queue emptied and refilled at once
    assert len(frontier.dispatch.front) == 0


def test_crawl_delay_is_honoured(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=0.5))
    frontier.set_crawl_delay("a.test", 3.0)
    for request in urls("a.test", 3):
        frontier.enqueue_request(request)
    starts = [t for t, _ in drain(frontier, clock, step=0.5)]
    assert starts == pytest.approx([0.0, 3.0, 6.0])
    assert store.hosts.crawl_delays() == {"a.test": 3.0}


def test_wake_up_timer_fires_at_the_due_time_once(store):
    local_only(store, "the shared dispatch also wakes to poll the shared host heap")
    clock, wakes = Clock(), Wakes()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=2.0), wake=wakes)
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    frontier.fetch_finished(frontier.next_request(), duration=0.0)
    assert frontier.next_request() is None
    assert frontier.next_request() is None
    calls = clock.getDelayedCalls()
    assert len(calls) == 1 and calls[0].getTime() == pytest.approx(2.0)
    clock.advance(1.99)
    assert wakes.count == 0
    clock.advance(0.01)
    assert wakes.count == 1
    assert frontier.next_request().url == "http://a.test/1"


def test_wake_up_timer_moves_earlier_when_an_earlier_host_appears(store):
    local_only(store, "the shared dispatch also wakes to poll the shared host heap")
    clock, wakes = Clock(), Wakes()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=5.0), wake=wakes)
    frontier.politeness.slots["b.test"] = {"delay": 1.0}
    for host in ["a.test", "b.test"]:
        for request in urls(host, 2):
            frontier.enqueue_request(request)
    a0 = frontier.next_request()
    frontier.fetch_finished(a0)
    b0 = frontier.next_request()
    assert b0.url == "http://b.test/0"
    assert frontier.next_request() is None
    assert [c.getTime() for c in clock.getDelayedCalls()] == [5.0]
    frontier.fetch_finished(b0)
    assert frontier.next_request() is None
    assert [c.getTime() for c in clock.getDelayedCalls()] == [1.0]
    clock.advance(1.0)
    assert wakes.count == 1


def test_close_cancels_the_timer(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=5.0))
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    frontier.fetch_finished(frontier.next_request())
    assert frontier.next_request() is None
    frontier.close("shutdown")
    assert clock.getDelayedCalls() == []


def test_left_downloader_signal_releases_host_using_download_latency(store):
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(factor=10))
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    request = frontier.next_request()
    request.meta["download_latency"] = 0.3
    clock.advance(1.0)
    frontier.request_left_downloader(request)
    assert frontier.politeness.ready_at("a.test") == pytest.approx(1.0 + 3.0)
    assert not frontier.inflight  # no engine: finished at once


def test_request_dropped_releases_the_host(store):
    frontier = make_frontier(store)
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    request = frontier.next_request()
    frontier.request_dropped(request)
    assert frontier.next_request().url == "http://a.test/1"


def test_requests_leaving_the_engine_unseen_are_swept():
    store = make_store("memory", None)
    engine_holds: set = set()
    frontier = make_frontier(store, in_progress=lambda: engine_holds)
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    request = frontier.next_request()
    engine_holds.add(request)
    assert frontier.next_request() is None  # in flight
    engine_holds.discard(request)  # a downloader middleware refused it
    assert frontier.next_request().url == "http://a.test/1"


def test_done_waits_until_the_engine_has_finished_with_the_response():
    store = make_store("memory", None)
    engine_holds: set = set()
    frontier = make_frontier(store, in_progress=lambda: engine_holds)
    frontier.enqueue_request(Request("http://a.test/0"))
    request = frontier.next_request()
    fp = frontier.inflight[request].entry.fingerprint
    engine_holds.add(request)
    frontier.response_received(Response(request.url, status=200, request=request), request)
    frontier.request_left_downloader(request)
    assert store.urls.status_of(fp) == Status.INFLIGHT  # callbacks still running
    engine_holds.discard(request)
    frontier.next_request()
    assert store.urls.status_of(fp) == Status.DONE


def test_mark_excluded_skips_queued_and_blocks_unknown_urls(store):
    clock = Clock()
    frontier = make_frontier(store, clock, queue_buffer=1)
    for request in urls("a.test", 3):
        frontier.enqueue_request(request)
    frontier.admission.mark_excluded("http://a.test/1")
    frontier.admission.mark_excluded("http://b.test/never")
    assert not frontier.enqueue_request(Request("http://b.test/never"))
    assert [url for _, url in drain(frontier, clock)] == ["http://a.test/0", "http://a.test/2"]


# -- the codec -------------------------------------------------------------------
class CodecSpider(Spider):
    name = "codec"

    def parse_item(self, response):
        pass

    def on_error(self, failure):
        pass


def test_common_requests_are_stored_compactly_and_round_trip():
    spider = CodecSpider()
    request = Request(
        "http://a.test/p", callback=spider.parse_item, errback=spider.on_error, priority=3,
        headers={"Referer": "http://a.test/"}, meta={"depth": 2, "link_text": "next"},
    )
    entry = encode(request, 1, "a.test", 5, spider)
    assert entry.blob is None and not entry.flags & FLAG_BLOB
    back = decode(entry, spider)
    assert (back.url, back.priority, back.meta, back.callback, back.errback) == (
        request.url, 3, {"depth": 2, "link_text": "next"}, spider.parse_item, spider.on_error,
    )
    assert back.headers.get("Referer") == b"http://a.test/"


def test_a_decoded_request_has_the_url_it_was_encoded_with():
    """decode sets the stored URL as is (no second percent-encoding): for every
    input of w3lib's safe_url_string vectors and of the URL resolution vectors,
    the request read back has its URL, no verbatim_url meta, and a later
    replace(url=...) is percent-encoded again."""
    inputs = [case["input"] for case in vectors("url_normalization_w3lib.json")["safe_url_string"]]
    inputs += [case["href"] for case in vectors("url_resolution.json")
               if isinstance(case, dict) and isinstance(case.get("href"), str)]
    spider, checked = CodecSpider(), 0
    for url in inputs:
        try:
            request = Request(url, meta={"depth": 1})
        except (ValueError, TypeError):
            continue
        entry = encode(request, 1, "a.test", 0, spider)
        back = decode(entry, spider)
        assert (back.url, back.meta) == (request.url, {"depth": 1}), url
        checked += 1
    assert checked > 150
    moved = decode(encode(Request("http://a.test/p"), 1, "a.test", 0, spider), spider).replace(
        url="http://a.test/a b")
    assert moved.url == "http://a.test/a%20b"


def test_links_followed_from_a_page_are_stored_compactly():
    spider = CodecSpider()
    page = HtmlResponse("http://a.test/", body=b'<a href="/x">x</a>')  # cp1252, no charset
    request = page.follow("/x", headers={"Referer": "http://a.test/"}, meta={"depth": 1})
    entry = encode(request, 1, "a.test", 0, spider)
    assert entry.blob is None
    back = decode(entry, spider)
    assert (back.url, back.encoding, back.meta) == ("http://a.test/x", "cp1252", {"depth": 1})


@pytest.mark.parametrize(
    "request_",
    [
        FormRequest("http://a.test/f", formdata={"q": "1"}),
        Request("http://a.test/h", headers={"X-Token": "1"}),
        Request("http://a.test/c", cookies={"s": "1"}),
        Request("http://a.test/m", meta={"custom": object.__name__}),
        Request("http://a.test/k", cb_kwargs={"k": 1}),
    ],
)
def test_other_requests_fall_back_to_a_blob_and_round_trip(request_):
    spider = CodecSpider()
    entry = encode(request_, 1, "a.test", 0, spider)
    assert entry.flags & FLAG_BLOB
    back = decode(entry, spider)
    assert back.to_dict(spider=spider) == request_.to_dict(spider=spider)


def test_unserialisable_requests_stay_in_memory():
    request = Request("http://a.test/l", callback=lambda r: None)
    entry = encode(request, 1, "a.test", 0, None)
    assert entry.flags & FLAG_MEMORY
    frontier = make_frontier(make_store("memory", None))
    assert frontier.enqueue_request(request)
    assert frontier.next_request() is request
    assert frontier.stats.get_value("frontier/unserializable") == 1


# -- from_crawler ------------------------------------------------------------------
def test_from_crawler_reads_settings(tmp_path):
    crawler = get_crawler(Spider, {
        "JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 5, "DOWNLOAD_DELAY": 0.7,
        "FRONTIER_FRONT_QUEUES": 3, "FRONTIER_SEEN_BACKEND": "bloom",
        "FRONTIER_PRIORITIZER": "extensions.frontier.prioritizer.DepthPrioritizer",
        "FRONTIER_QUEUE_BUFFER": 16, "FRONTIER_SEEN_CACHE_SIZE": 10,
        "FRONTIER_REFILL_BUDGET": 100, "FRONTIER_SQLITE_CACHE_MB": 8,
        "FRONTIER_BLOOM_INITIAL_CAPACITY": 1000, "FRONTIER_BLOOM_ERROR_RATE": 0.01,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "FRONTIER_CHECKPOINT_INTERVAL": 0,
    })
    frontier = Frontier.from_crawler(crawler)
    assert len(frontier.dispatch.back.queues) == 15 and len(frontier.dispatch.front.queues) == 3
    assert frontier.politeness.delay == 0.7
    frontier.open(Spider("s"))
    assert frontier.enqueue_request(Request("http://a.test/"))
    frontier.close("finished")
    assert (tmp_path / "job" / "frontier.sqlite3").exists()
    assert (tmp_path / "job" / "frontier.bloom").exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [("FRONTIER_FRONT_QUEUES", 0), ("FRONTIER_SEEN_BACKEND", "maybe"), ("DOWNLOAD_DELAY", -1)],
)
def test_invalid_settings_fail_at_start_naming_the_setting(name, value):
    crawler = get_crawler(Spider, {name: value})
    with pytest.raises(ValueError, match=name):
        Frontier.from_crawler(crawler)


def test_start_requests_are_stored_compactly(store):
    frontier = make_frontier(store)
    seed = {"is_start_request": True}
    assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta=seed))
    fp = url_fingerprint("http://a.test/")[0]
    entry = store.urls.get_many([fp])[fp]  # the stored row (either dispatch)
    assert entry.url == "http://a.test/" and not entry.flags & (FLAG_BLOB | FLAG_MEMORY)
    assert entry.blob is None  # start requests are stored compactly too


def test_gauges_count_the_urls_waiting_in_each_front_queue() -> None:
    """The report and the metrics show the frontier by front-queue level."""
    frontier = make_frontier(make_store("memory", None))
    for depth, count in ((0, 3), (2, 2)):
        for i in range(count):
            frontier.enqueue_request(Request(f"http://h{depth}-{i}.test/", meta={"depth": depth}))
    frontier.checkpoint()
    levels = {key: value for key, value in frontier.stats.values.items() if key.startswith("frontier/level/")}
    assert sum(levels.values()) == 5 and len([v for v in levels.values() if v]) == 2, levels


def test_the_url_counts_by_status_are_current_when_the_frontier_is_idle() -> None:
    """The count is spaced out by its cost during a crawl, but an idle
    frontier (its close) is always counted: was, the demo's report kept
    URLs "queued" that had been deferred just before the end."""
    frontier = make_frontier(make_store("memory", None))
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    frontier.stats.set_value("frontier/urls_count_seconds", 3600.0)  # as if counting were slow: spaced out
    frontier.checkpoint()  # not idle: not counted again
    assert frontier.stats.get_value("frontier/urls/queued") == 0  # the count at open
    request = frontier.next_request()
    frontier.fetch_finished(request, duration=0.0)
    frontier.checkpoint()
    assert frontier.stats.get_value("frontier/urls/done") == 1 and frontier.stats.get_value("frontier/urls/queued") == 0
