"""One parse per page (extensions.processors.parsedpage): links, tag counts
and content features read from the shared parse are exactly those of each
reader's own scan, on the test web's pages, on real documentation pages and
on the inputs where the two parses could differ; and a page is parsed once
however many readers ask."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from extensions.contentseen import features as features_module
from extensions.contentseen.features import content_features
from extensions.processors import html_links, parsedpage, tag_counter
from extensions.processors.content_features import ContentFeatureExtractor
from extensions.processors.html_links import HtmlLinkExtractor
from extensions.processors.parsedpage import parse_page, parsed_page
from extensions.processors.tag_counter import TagCounter
from tests.pagecorpus import real_pages, synthetic_pages


Readers = tuple[ContentFeatureExtractor, HtmlLinkExtractor, TagCounter]


def readers() -> Readers:
    crawler = get_crawler()
    crawler.stats.open_spider()
    return (ContentFeatureExtractor.from_crawler(crawler), HtmlLinkExtractor.from_crawler(crawler),
            TagCounter.from_crawler(crawler))


def shared(response: HtmlResponse, readers: Readers) -> tuple[Any, ...]:
    """What the spider computes per page, in its order: features, then the processors."""
    features, links, tags = readers
    return features.extract(response, "text/html"), links.process(response), tags.process(response)


def separate(response: HtmlResponse, readers: Readers, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The same through the old paths: each processor scans, the features
    parse (call it before :func:`shared`: the memo would answer)."""
    _, links, tags = readers
    with monkeypatch.context() as patch:
        patch.setattr(parsedpage, "TREE_MAX_BYTES", -1)  # no tree: the processors stream
        scanned = links.process(response), tags.process(response)
    return content_features(response.body, response.encoding, "text/html"), *scanned


def assert_same_on(pages: list[tuple[str, bytes, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    assert pages
    both = readers()
    for url, body, encoding in pages:
        response = HtmlResponse(url, body=body, encoding=encoding)
        old = separate(response, both, monkeypatch)
        assert shared(response, both) == old, url


def test_shared_parse_equals_separate_scans_on_the_test_web(monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same_on(synthetic_pages(), monkeypatch)


def test_shared_parse_equals_separate_scans_on_real_documentation(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = real_pages(every=4)
    assert_same_on(pages, monkeypatch)


TRICKY = {
    "lt in a quoted href": b'<a href="a<b">x</a><a href="/c">c</a>',
    "lt in an unquoted href": b"<a href=a<b>x</a><a href=/c>c</a>",
    "lt in another attribute of a link": b'<a title="1<2" href="/t">t</a>',
    "lt in a tag name": b'<p<body><h1<a href="/h">h</h1><a href="/a">a</a>',
    "lt in an unquoted value of another element": b'<div class=x<y><a href="/a">a</a></div>',
    "lt in a meta content": b'<meta name="robots" content="<nofollow"><a href="/m">m</a>',
    "nul characters": b'<a href="/a">\xff\x00\xc3</a>' + b"\x00" * 50 + b'<a href="/b">b</a>',
    "nesting past libxml2's depth limit": b"<body>" + b"<div>x" * 400 + b'<a href="/deep">d</a>',
    "text before any tag": b'words first <a href="/w">w</a> 1<2 and a<b',
    "xml declaration with an encoding": b'<?xml version="1.0" encoding="utf-8"?><p><a href="/x">x</a>',
    "a late base": b'<a href="x">x</a><p>filler</p><base href="http://b.test/base/">',
    "frames": b'<frameset><frame src="/f1"><frame src="/f2"></frameset>',
    "nofollow page": b'<meta name="robots" content="noindex,nofollow"><a href="/n">n</a>',
    "empty": b"",
    "only a comment": b"<!-- nothing -->",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_shared_parse_equals_separate_scans_where_parses_could_differ(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same_on([(f"http://a.test/{name.replace(' ', '-')}", TRICKY[name], "utf-8")], monkeypatch)


def test_inputs_the_text_parse_reads_differently_are_not_exact() -> None:
    for name in ("nul characters", "nesting past libxml2's depth limit"):
        assert not parse_page(TRICKY[name], "utf-8", 1 << 20).exact, name
    # the tree is the scan's own parse: a "<" inside a tag reads the same in both
    for name in ("a late base", "lt in a quoted href", "lt in an unquoted href", "lt in a tag name",
                 "lt in an unquoted value of another element"):
        assert parse_page(TRICKY[name], "utf-8", 1 << 20).exact, name


def test_a_page_is_parsed_once_for_features_links_and_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = parsedpage.text_tree

    def counting(body: bytes, encoding: str | None) -> Any:
        calls.append(len(body))
        return original(body, encoding)

    monkeypatch.setattr(parsedpage, "text_tree", counting)
    monkeypatch.setattr(features_module, "visible_text", lambda *a: pytest.fail("visible text parsed again"))
    body = b'<title>t</title><p>some words</p><a href="/a">a</a>'
    both = readers()
    first, second = (HtmlResponse(f"http://a.test/{n}", body=body, encoding="utf-8") for n in (1, 2))
    for response in (first, second):
        features, links, tags = shared(response, both)
        assert features.near is not None and links["links"] and tags["tags"]["a"] == 1
    assert calls == [len(body), len(body)]


def test_links_and_tags_share_one_parse_without_the_content_seen_test(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = parsedpage.parse_page
    monkeypatch.setattr(parsedpage, "parse_page", lambda *a, **k: calls.append(1) or original(*a, **k))
    for module in (html_links, tag_counter):
        monkeypatch.setattr(module, "scan_html", lambda *a: pytest.fail("scanned again"))
    response = HtmlResponse("http://a.test/", body=b'<a href="/a">a</a>', encoding="utf-8")
    _, links, tags = readers()
    assert links.process(response)["links"] == ["http://a.test/a"]
    assert tags.process(response)["tags"]["a"] == 1
    assert parsed_page(response, 1 << 20).text is None  # no text asked for, none computed
    assert calls == [1]


def test_a_document_over_the_tree_bound_is_streamed_not_parsed_into_a_tree() -> None:
    body = b'<a href="/a">a</a>' + b"<p>filler words</p>" * 100
    response = HtmlResponse("http://a.test/", body=body, encoding="utf-8")
    assert parsed_page(response, parsedpage.TREE_MAX_BYTES) is not None
    big = HtmlResponse("http://a.test/big", body=body + b" " * parsedpage.TREE_MAX_BYTES, encoding="utf-8")
    assert parsed_page(big, 8 << 20) is None
    assert HtmlLinkExtractor().process(big)["links"] == ["http://a.test/a"]


def test_the_memo_keeps_no_response_alive() -> None:
    import gc
    import weakref

    response = HtmlResponse("http://a.test/", body=b"<p>x</p>", encoding="utf-8")
    parsed_page(response, 1 << 20)
    ref = weakref.ref(response)
    del response
    gc.collect()
    assert ref() is None
