"""Recording the link graph (``LINKGRAPH_RECORD``, :mod:`extensions.frontier.linkrecord`).

Over every store and both host dispatches: ``Frontier.page_done`` records a
page's accepted outlinks by the fingerprints the admission files them under,
with AOPIC on and off, for a duplicate page too, and nothing with the setting
off; a redirect's ``Location`` is its one outlink. End to end (``scrapy crawl
web`` on the synthetic test web): the recorded graph equals the test web's
ground-truth links of every fetched page, after the crawl's canonicalisation
and URL filter, on SQLite and on Redis with two processes, and a crawl killed
with SIGKILL keeps the list of every page marked done. (The store contract
itself: ``tests/test_store_conformance.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.page import PageVerdict, link_request
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.frontier.scheduler import Frontier
from tests.test_frontier_support import STORES, make_frontier, make_store


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def fp_of(url: str) -> int:
    return url_fingerprint(url)[0]


def fetched(frontier: Frontier, url: str) -> Request:
    """``url`` filed, handed out and fetched; the request."""
    assert frontier.enqueue_request(Request(url, meta={"is_start_request": True}))
    request = frontier.next_request()
    assert request is not None and request.url == url
    frontier.fetch_finished(request, duration=0.0)
    return request


LINKS = ["http://b.test/1", "http://c.test/x?a=1", "http://b.test/1", "http://a.test/"]


@pytest.mark.parametrize("aopic", [True, False], ids=["aopic", "no-aopic"])
def test_page_done_records_the_outlinks_by_their_admission_fingerprints(store: Any, aopic: bool) -> None:
    parts = {"ledger": AOPICLedger(store), "prioritizer": CashPrioritizer(8)} if aopic else {}
    frontier = make_frontier(store, Clock(), **parts)
    fetched(frontier, "http://a.test/")
    done = frontier.page_done(PageVerdict("http://a.test/", LINKS))
    expected = [fp_of("http://b.test/1"), fp_of("http://c.test/x?a=1"), fp_of("http://a.test/")]
    assert store.links.targets_of(fp_of("http://a.test/")) == expected  # in order, each once, self-link kept
    assert frontier.stats.get_value("linkgraph/pages") == 1
    assert frontier.stats.get_value("linkgraph/edges") == 3
    assert set(done.credit) == (set(LINKS) if aopic else set())  # AOPIC's step still credits them
    for link in dict.fromkeys(LINKS):  # the admission files each under the recorded id
        frontier.enqueue_request(link_request(link, 1, "http://a.test/", done.credit.get(link)))
    new = expected[:2]  # (a.test/ is done: Redis in Bloom mode keeps no finished row)
    assert set(store.urls.get_many(new)) == set(new)


def test_a_refetch_replaces_the_list_and_a_page_without_links_gets_an_empty_one(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1", "http://b.test/2"]))
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/3"]))
    frontier.page_done(PageVerdict("http://a.test/image.png"))
    assert store.links.targets_of(fp_of("http://a.test/")) == [fp_of("http://b.test/3")]
    assert store.links.targets_of(fp_of("http://a.test/image.png")) == []
    assert store.links.sources() == 2


def test_a_duplicate_page_records_its_links_without_crediting_them(store: Any) -> None:
    frontier = make_frontier(store, Clock(), ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8))
    fetched(frontier, "http://mirror.test/")
    done = frontier.page_done(PageVerdict("http://mirror.test/", ["http://mirror.test/p"], follow=False,
                                          content_group=3, duplicate=True))
    assert done.credit == {} and frontier.ledger.cash_of(fp_of("http://mirror.test/p")) is None
    assert store.links.targets_of(fp_of("http://mirror.test/")) == [fp_of("http://mirror.test/p")]


def test_a_redirected_page_s_links_belong_to_its_final_url(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    frontier.page_done(PageVerdict("http://a.test/old", ["http://b.test/1"], final_url="http://a.test/new"))
    assert store.links.targets_of(fp_of("http://a.test/new")) == [fp_of("http://b.test/1")]
    assert store.links.targets_of(fp_of("http://a.test/old")) is None  # the redirect's own list comes at its fetch


def test_a_redirect_records_its_location_as_its_one_outlink(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    assert frontier.enqueue_request(Request("http://a.test/old"))
    request = frontier.next_request()
    redirect = Response(request.url, status=301, headers={"Location": "/New#x"}, request=request)
    frontier.response_received(redirect, request)
    ok = HtmlResponse(request.url, status=200, body=b"<a href=/y>", request=request)
    frontier.response_received(ok, request)  # not a redirect: recorded by page_done, not here
    assert store.links.targets_of(fp_of("http://a.test/old")) == [fp_of("http://a.test/New")]
    assert frontier.stats.get_value("linkgraph/redirects") == 1
    bad = Response(request.url, status=302, headers={"Location": "http://[bad"}, request=request)
    frontier.response_received(bad, request)  # no URL: counted, the list stays
    assert frontier.stats.get_value("linkgraph/bad_redirects") == 1
    assert store.links.targets_of(fp_of("http://a.test/old")) == [fp_of("http://a.test/New")]


def test_with_recording_off_nothing_is_recorded_and_aopic_still_credits(store: Any) -> None:
    frontier = make_frontier(store, Clock(), ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8),
                             linkgraph_record=False)
    request = fetched(frontier, "http://a.test/")
    done = frontier.page_done(PageVerdict("http://a.test/", LINKS))
    frontier.response_received(Response(request.url, status=301, headers={"Location": "/z"}, request=request),
                               request)
    assert set(done.credit) == set(LINKS)
    assert store.links.sources() == 0 and list(store.links.scan()) == []
    assert frontier.stats.get_value("linkgraph/pages") is None
