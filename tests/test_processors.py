"""Processing modules: the MIME registry, link extraction, tag counting,
image header parsing and the content-seen test's features, on crafted
responses and hand-built image files."""

from __future__ import annotations

import json
import logging
import struct
import zlib
from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from extensions.contentseen.features import ContentFeatures
from extensions.contentseen.fingerprint import bytes_fingerprint, text_fingerprint
from extensions.contentseen.resemblance import near_features
from extensions.processors.content_features import ContentFeatureExtractor
from extensions.processors.html_links import HtmlLinkExtractor
from extensions.processors.image_stats import ImageStats, image_dimensions
from extensions.processors.registry import ProcessorRegistry
from extensions.processors.tag_counter import TagCounter

HERE = "tests.test_processors"


# --- Registry ---------------------------------------------------------------

class Counting:
    """Counts its instances, to prove one instance per crawl."""

    instances = 0

    def __init__(self) -> None:
        type(self).instances += 1

    def process(self, response: Response) -> dict[str, Any]:
        return {"links": ["http://a.test/counting"], "counting": True}


class Other:
    def process(self, response: Response) -> dict[str, Any]:
        return {"links": ["http://a.test/other", "http://a.test/counting"], "other": 1}


class Fallback:
    def process(self, response: Response) -> None:
        return None


class Boom:
    def process(self, response: Response) -> dict[str, Any]:
        raise RuntimeError("processor bug")


class Disabled:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Disabled:
        raise NotConfigured("switched off")

    def process(self, response: Response) -> None:
        return None


def registry(modules: Any) -> tuple[ProcessorRegistry, Crawler]:
    crawler = get_crawler(settings_dict={"PROCESSING_MODULES": modules})
    crawler.stats.open_spider()
    return ProcessorRegistry.from_crawler(crawler), crawler


def names(processors: list[Any]) -> list[str]:
    return [type(p).__name__ for p in processors]


@pytest.fixture(autouse=True)
def reset_counting() -> None:
    Counting.instances = 0


def test_exact_match_comes_first_then_wildcards_in_setting_order() -> None:
    reg, _ = registry({
        "*/*": [f"{HERE}.Fallback"],
        "text/*": [f"{HERE}.Other", f"{HERE}.Counting"],
        "text/html": [f"{HERE}.Counting"],
    })
    assert names(reg.for_type("text/html")) == ["Counting", "Fallback", "Other"]
    assert names(reg.for_type("text/plain")) == ["Fallback", "Other", "Counting"]
    assert names(reg.for_type("image/png")) == ["Fallback"]


def test_each_class_is_instantiated_once_and_shared() -> None:
    reg, _ = registry({
        "text/html": [f"{HERE}.Counting"],
        "image/*": [f"{HERE}.Counting"],
        "application/xhtml+xml": [f"{HERE}.Counting", f"{HERE}.Counting"],
    })
    assert Counting.instances == 1
    assert reg.for_type("text/html")[0] is reg.for_type("image/gif")[0]
    assert len(reg.for_type("application/xhtml+xml")) == 1


def test_unknown_type_has_no_processors() -> None:
    reg, _ = registry({"image/*": [f"{HERE}.Counting"]})
    assert reg.for_type("text/html") == []
    assert reg.for_type("imagex/png") == []


def test_setting_may_be_a_json_string_from_the_command_line() -> None:
    reg, _ = registry(json.dumps({"image/*": [f"{HERE}.Other"]}))
    assert names(reg.for_type("image/jpeg")) == ["Other"]


def test_default_modules_when_setting_is_unset() -> None:
    reg = ProcessorRegistry.from_crawler(get_crawler())
    assert names(reg.for_type("text/html")) == ["HtmlLinkExtractor", "TagCounter"]
    assert names(reg.for_type("application/xhtml+xml")) == ["HtmlLinkExtractor", "TagCounter"]
    assert names(reg.for_type("image/png")) == ["ImageStats"]


def test_bad_class_path_fails_at_start_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="PROCESSING_MODULES.*nowhere.Nothing"):
        registry({"text/html": ["nowhere.Nothing"]})


def test_not_configured_processor_is_left_out() -> None:
    reg, _ = registry({"text/html": [f"{HERE}.Disabled", f"{HERE}.Other"]})
    assert names(reg.for_type("text/html")) == ["Other"]


def test_run_merges_fields_and_links_without_duplicates() -> None:
    reg, _ = registry({"text/html": [f"{HERE}.Counting", f"{HERE}.Fallback", f"{HERE}.Other"]})
    result = reg.run(HtmlResponse("http://a.test/", body=b"<p>"), "text/html")
    assert result == {
        "links": ["http://a.test/counting", "http://a.test/other"],
        "counting": True, "other": 1,
    }


def test_a_failing_processor_is_isolated_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reg, crawler = registry({"text/html": [f"{HERE}.Boom", f"{HERE}.Other"]})
    response = HtmlResponse("http://a.test/", body=b"<p>")
    with caplog.at_level(logging.ERROR):
        first = reg.run(response, "text/html")
        second = reg.run(response, "text/html")
    assert first == second == {"links": ["http://a.test/other", "http://a.test/counting"], "other": 1}
    assert crawler.stats.get_value("processors/errors/Boom") == 2
    assert sum("Boom" in record.getMessage() for record in caplog.records) == 1


# --- HTML link extractor ----------------------------------------------------

def page(body: str | bytes, url: str = "http://a.test/dir/page.html", encoding: str = "utf-8") -> HtmlResponse:
    raw = body.encode(encoding) if isinstance(body, str) else body
    return HtmlResponse(url, body=raw, encoding=encoding)


def links_of(body: str | bytes, **kwargs: Any) -> list[str]:
    return HtmlLinkExtractor().process(page(body, **kwargs))["links"]


def extractor(**settings: Any) -> tuple[HtmlLinkExtractor, Crawler]:
    crawler = get_crawler(settings_dict=settings)
    crawler.stats.open_spider()
    return HtmlLinkExtractor.from_crawler(crawler), crawler


def test_links_come_from_each_tag_kind_in_document_order() -> None:
    body = """<html><head>
      <link rel="stylesheet" href="/style.css">
      <link rel="next" href="/p2"><link rel="Prev" href="/p0">
      <link rel="alternate" hreflang="fr" href="/fr/">
      <link rel="icon" href="/favicon.ico">
    </head><body>
      <a href="/a">a</a><a name="anchor-only">no href</a>
      <map><area href="/area" shape="rect"></map>
      <iframe src="/iframe"></iframe>
    </body></html>"""
    assert links_of(body) == [
        "http://a.test/p2", "http://a.test/p0", "http://a.test/fr/",
        "http://a.test/a", "http://a.test/area", "http://a.test/iframe",
    ]


def test_frames_are_followed() -> None:
    body = '<frameset><frame src="left.html"><frame src="right.html"></frameset>'
    assert links_of(body) == ["http://a.test/dir/left.html", "http://a.test/dir/right.html"]


def test_relative_links_resolve_against_the_page() -> None:
    body = '<a href="sub/x">1</a><a href="../up">2</a><a href="//b.test/p">3</a><a href="?q=1">4</a>'
    assert links_of(body) == [
        "http://a.test/dir/sub/x", "http://a.test/up", "http://b.test/p",
        "http://a.test/dir/page.html?q=1",
    ]


def test_base_href_changes_resolution() -> None:
    body = '<head><base href="/other/base/"></head><a href="x">x</a><a href="/abs">y</a>'
    assert links_of(body) == ["http://a.test/other/base/x", "http://a.test/abs"]


def test_fragments_are_dropped_and_links_deduplicated_in_order() -> None:
    body = '<a href="/b#one">1</a><a href="/a">2</a><a href="/b#two">3</a><a href="http://A.TEST:80/a">4</a>'
    assert links_of(body) == ["http://a.test/b", "http://a.test/a"]


def test_invalid_and_non_http_links_are_dropped_and_counted() -> None:
    extract, crawler = extractor()
    body = """<a href="mailto:me@a.test">m</a><a href="javascript:void(0)">j</a>
      <a href="ftp://a.test/f">f</a><a href="http://[::1/x">v6</a><a href="/ok">ok</a>"""
    assert extract.process(page(body))["links"] == ["http://a.test/ok"]
    assert crawler.stats.get_value("links/invalid") == 4


def test_rel_nofollow_links_are_skipped_and_counted() -> None:
    extract, crawler = extractor()
    body = '<a href="/a" rel="NoFollow">1</a><a href="/b" rel="external nofollow">2</a><a href="/c">3</a>'
    result = extract.process(page(body))
    assert result == {"links": ["http://a.test/c"], "nofollow": False}
    assert crawler.stats.get_value("links/nofollow") == 2


@pytest.mark.parametrize("content", ["nofollow", "NOINDEX, NoFollow", "none"])
def test_meta_robots_nofollow_skips_every_link(content: str) -> None:
    extract, crawler = extractor()
    body = f'<head><meta name="Robots" content="{content}"></head><a href="/a">1</a><a href="/b">2</a>'
    assert extract.process(page(body)) == {"links": [], "nofollow": True}
    assert crawler.stats.get_value("links/nofollow") == 2


def test_meta_robots_without_nofollow_keeps_links() -> None:
    body = '<meta name="robots" content="noindex, follow"><meta name="description" content="none"><a href="/a">'
    assert links_of(body) == ["http://a.test/a"]


def test_ignore_nofollow_setting_follows_everything() -> None:
    extract, crawler = extractor(LINKS_IGNORE_NOFOLLOW=True)
    body = '<meta name="robots" content="nofollow"><a href="/a" rel="nofollow">1</a><a href="/b">2</a>'
    assert extract.process(page(body)) == {"links": ["http://a.test/a", "http://a.test/b"], "nofollow": True}
    assert crawler.stats.get_value("links/nofollow") is None


def test_latin1_page_query_is_encoded_in_the_page_charset() -> None:
    body = '<a href="/search?q=café">x</a><a href="/café">y</a>'
    assert links_of(body, encoding="latin-1") == [
        "http://a.test/search?q=caf%E9",  # what a browser sends for a latin-1 page
        "http://a.test/caf%C3%A9",  # paths are always UTF-8
    ]


def test_shift_jis_page_query_is_encoded_in_shift_jis() -> None:
    body = '<html><head><meta charset="shift_jis"></head><a href="/s?q=日本">x</a></html>'
    response = HtmlResponse("http://a.test/", body=body.encode("shift_jis"))
    assert response.encoding in ("shift_jis", "cp932")  # read from the meta tag
    assert HtmlLinkExtractor().process(response)["links"] == ["http://a.test/s?q=%93%FA%96%7B"]


def test_malformed_html_still_yields_links() -> None:
    body = '<html><body><div><a href="/one">unclosed <p><a href=/two >x<table><tr><td><a href="/three"</td></html'
    assert links_of(body) == ["http://a.test/one", "http://a.test/two", "http://a.test/three"]


@pytest.mark.parametrize("body", [b"", b"\x00\xff\xfe\x89PNG\r\n\x1a\n\x00\x00garbage\x00" * 50, b"   \n "])
def test_empty_or_binary_bodies_give_no_links(body: bytes) -> None:
    response = HtmlResponse("http://a.test/", body=body)
    assert HtmlLinkExtractor().process(response) == {"links": [], "nofollow": False}


def test_non_text_response_gives_no_links() -> None:
    response = Response("http://a.test/", body=b'<a href="/a">')
    assert HtmlLinkExtractor().process(response) == {"links": [], "nofollow": False}


# --- Tag counter --------------------------------------------------------------

def test_tag_counter_counts_elements_not_comments() -> None:
    body = "<html><body><!-- c --><p>1<p>2<a href=x>y</a><?pi x?><p>3</body></html>"
    tags = TagCounter().process(page(body))["tags"]
    assert tags == {"p": 3, "a": 1, "html": 1, "body": 1}


def test_tag_counter_reports_only_the_most_common_tags() -> None:
    crawler = get_crawler(settings_dict={"TAG_COUNTER_MAX_TAGS": 2})
    body = "<div>" + "<p>x</p>" * 5 + "<span>y</span>" * 3 + "<b>z</b>" + "</div>"
    assert TagCounter.from_crawler(crawler).process(page(body))["tags"] == {"p": 5, "span": 3}


class NoSelector(HtmlResponse):
    """A response whose whole-document tree must never be built."""

    @property
    def selector(self) -> Any:
        raise AssertionError("response.selector parses the whole document into a tree")


def test_html_processors_never_build_the_whole_document_tree() -> None:
    response = NoSelector("http://a.test/", body=b"<p><a href='/a'>x</a>", encoding="utf-8")
    assert HtmlLinkExtractor().process(response)["links"] == ["http://a.test/a"]
    assert TagCounter().process(response)["tags"]["a"] == 1


def test_tag_counter_survives_empty_body() -> None:
    assert TagCounter().process(page(b"")) == {"tags": {}}


def test_tag_counter_rejects_non_positive_cap() -> None:
    with pytest.raises(ValueError, match="TAG_COUNTER_MAX_TAGS"):
        TagCounter.from_crawler(get_crawler(settings_dict={"TAG_COUNTER_MAX_TAGS": 0}))


# --- Per-page bounds ---------------------------------------------------------

def many_links(count: int, prefix: str = "/l/") -> bytes:
    return b"<html><body>" + b"".join(b'<a href="%s%d">x</a>' % (prefix.encode(), i) for i in range(count))


def test_links_stop_at_the_cap_and_the_page_is_counted() -> None:
    extract, crawler = extractor(LINKS_MAX_PER_PAGE=100)
    links = extract.process(page(many_links(5000)))["links"]
    assert links == [f"http://a.test/l/{i}" for i in range(100)]
    assert crawler.stats.get_value("links/capped") == 1


def test_a_page_at_the_cap_is_not_counted_below_it() -> None:
    extract, crawler = extractor(LINKS_MAX_PER_PAGE=100)
    assert len(extract.process(page(many_links(99)))["links"]) == 99
    assert crawler.stats.get_value("links/capped") is None


def test_repeated_links_and_fragments_do_not_use_up_the_cap() -> None:
    extract, crawler = extractor(LINKS_MAX_PER_PAGE=3)
    body = b'<a href="#top">t</a>' * 500 + b'<a href="/a#x">a</a><a href="/a">a</a>' * 500 + b'<a href="/b">b</a>'
    assert extract.process(page(body))["links"] == ["http://a.test/dir/page.html", "http://a.test/a",
                                                    "http://a.test/b"]
    assert crawler.stats.get_value("links/capped") == 1


def test_only_the_first_parse_bytes_are_read_and_the_cut_is_counted() -> None:
    extract, crawler = extractor(PROCESSING_MAX_PARSE_BYTES=1000)
    body = many_links(2000)
    links = extract.process(page(body))["links"]
    assert 0 < len(links) < 1000 // len(b'<a href="/l/0">x</a>')
    assert links == [f"http://a.test/l/{i}" for i in range(len(links))]
    assert crawler.stats.get_value("processors/truncated/HtmlLinkExtractor") == 1
    assert crawler.stats.get_value("links/capped") is None


def test_a_page_within_the_parse_bytes_is_read_whole_across_chunks() -> None:
    extract, crawler = extractor(PROCESSING_MAX_PARSE_BYTES=len(many_links(9000)))
    assert len(extract.process(page(many_links(9000)))["links"]) == 9000  # over 3 scan chunks
    assert crawler.stats.get_value("processors/truncated/HtmlLinkExtractor") is None


def test_a_late_base_href_still_applies_to_every_link() -> None:
    body = '<a href="x">x</a>' + "<p>filler</p>" * 20000 + '<base href="http://b.test/base/">'
    assert links_of(body) == ["http://b.test/base/x"]


def test_tag_counter_reads_only_the_first_parse_bytes() -> None:
    crawler = get_crawler(settings_dict={"PROCESSING_MAX_PARSE_BYTES": 1000})
    crawler.stats.open_spider()
    tags = TagCounter.from_crawler(crawler).process(page(many_links(2000)))["tags"]
    assert 0 < tags["a"] < 100
    assert crawler.stats.get_value("processors/truncated/TagCounter") == 1


@pytest.mark.parametrize("name", ["LINKS_MAX_PER_PAGE", "PROCESSING_MAX_PARSE_BYTES"])
def test_non_positive_caps_fail_at_start_naming_the_setting(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        HtmlLinkExtractor.from_crawler(get_crawler(settings_dict={name: 0}))


def test_invalid_bytes_in_the_page_encoding_do_not_stop_the_scan() -> None:
    body = b'<a href="/a">\xff\xfe\x00\xc3</a>' + b"\x00" * 100 + b'<a href="/b">b</a>'
    assert links_of(body) == ["http://a.test/a", "http://a.test/b"]


# --- Image header parsing -----------------------------------------------------

def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def gif(width: int, height: int, version: bytes = b"89a") -> bytes:
    # Header, logical screen (2-colour global table), table, image
    # descriptor, LZW data for an all-zero image, trailer.
    return (
        b"GIF" + version + struct.pack("<HHBBB", width, height, 0x80, 0, 0)
        + b"\x00\x00\x00\xff\xff\xff"
        + b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
        + b"\x02\x02\x44\x01\x00" + b";"
    )


def jpeg(width: int, height: int, sof: int = 0xC0, fill: int = 0) -> bytes:
    def segment(marker: int, data: bytes) -> bytes:
        return b"\xff" * fill + bytes([0xFF, marker]) + struct.pack(">H", len(data) + 2) + data

    jfif = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    exif = b"Exif\x00\x00" + b"\xff\xc0" * 20  # SOF-looking bytes inside APP1 must be skipped
    dqt = b"\x00" + bytes(range(64))
    dht = b"\x00" + bytes(16)
    frame = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    scan = b"\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00"
    return (
        b"\xff\xd8" + segment(0xE0, jfif) + segment(0xE1, exif) + segment(0xFE, b"comment")
        + segment(0xDB, dqt) + segment(0xC4, dht) + segment(sof, frame)
        + segment(0xDA, scan) + b"\x12\x34" + b"\xff\xd9"
    )


@pytest.mark.parametrize(("body", "expected"), [
    (png(3, 2), ("png", 3, 2)),
    (png(70000, 1), ("png", 70000, 1)),
    (gif(10, 20), ("gif", 10, 20)),
    (gif(300, 1, b"87a"), ("gif", 300, 1)),
    (jpeg(640, 480), ("jpeg", 640, 480)),
    (jpeg(17, 4000, sof=0xC2), ("jpeg", 17, 4000)),  # progressive
    (jpeg(5, 6, fill=3), ("jpeg", 5, 6)),  # 0xFF fill bytes before markers
])
def test_image_dimensions_of_real_headers(body: bytes, expected: tuple[str, int, int]) -> None:
    assert image_dimensions(body) == expected


@pytest.mark.parametrize("body", [
    b"", b"GIF89a\x01", png(3, 2)[:20], jpeg(640, 480)[:150], b"\xff\xd8",
    b"\xff\xd8\xff\xd9",  # end of image before any frame
    b"\xff\xd8\xff\xe0\x00\x01",  # impossible segment length
    b"\xff\xd8\x00\x00\x00\x00",  # no marker where one must be
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDX" + bytes(13),  # first chunk is not IHDR
    b"<html>not an image</html>", b"RIFF\x00\x00\x00\x00WEBPVP8 ",
])
def test_image_dimensions_of_truncated_corrupt_or_unknown_is_none(body: bytes) -> None:
    assert image_dimensions(body) is None


def test_image_stats_reports_format_size_and_bytes() -> None:
    body = png(4, 5)
    response = Response("http://a.test/i.png", body=body)
    assert ImageStats().process(response) == {
        "image": {"format": "png", "width": 4, "height": 5, "bytes": len(body)},
    }


def test_image_stats_counts_unparsed_images_without_raising() -> None:
    crawler = get_crawler()
    crawler.stats.open_spider()
    stats = ImageStats.from_crawler(crawler)
    assert stats.process(Response("http://a.test/i.jpg", body=jpeg(9, 9)[:40])) == {
        "image": {"format": None, "bytes": 40},
    }
    assert crawler.stats.get_value("images/unparsed") == 1


# --- Content features (the content-seen test's data) ---------------------------

def features_of(response: Response, mime: str = "text/html", **settings: Any) -> ContentFeatures:
    return ContentFeatureExtractor.from_crawler(get_crawler(settings_dict=settings)).extract(response, mime)


PROSE = " ".join(f"word{n} river mountain copper" for n in range(40))


def test_normalised_fingerprint_ignores_markup_and_raw_does_not() -> None:
    first = page(f"<html><body><p>{PROSE}</p></body></html>")
    second = page(f"<div>\n  {PROSE}  </div><!-- other template -->")
    assert features_of(first).fingerprint == features_of(second).fingerprint == text_fingerprint(PROSE)
    raw = [features_of(response, CONTENTSEEN_MODE="raw").fingerprint for response in (first, second)]
    assert raw == [bytes_fingerprint(first.body), bytes_fingerprint(second.body)]


def test_text_features_are_those_of_the_visible_text() -> None:
    found = features_of(page(f"<p>{PROSE}</p><script>var x = 1;</script>"))
    assert found.near == near_features(PROSE)
    assert not found.empty_text


def test_a_page_without_visible_text_is_fingerprinted_by_its_bytes_and_flagged() -> None:
    frameset = page('<html><frameset cols="50%,50%"><frame src="a.html"></frameset></html>')
    found = features_of(frameset)
    assert found == ContentFeatures(bytes_fingerprint(frameset.body), None, True)
    assert not features_of(frameset, CONTENTSEEN_MODE="raw").empty_text


def test_a_large_page_keeps_its_byte_fingerprint_and_first_text_only() -> None:
    """CONTENTSEEN_MAX_TEXT_BYTES bounds the parse (memory); the exact test
    still sees every byte."""
    head = f"<p>{PROSE}</p>".encode()
    large = page(head + b"<p>" + b"tail words differ " * 200 + b"</p>")
    found = features_of(large, CONTENTSEEN_MAX_TEXT_BYTES=len(head))
    assert found.fingerprint == bytes_fingerprint(large.body)
    assert found.near == near_features(PROSE)


def test_documents_that_are_not_text_have_only_a_byte_fingerprint() -> None:
    image = Response("http://a.test/i.png", body=png(3, 3))
    assert features_of(image, "image/png") == ContentFeatures(bytes_fingerprint(image.body), None, False)


def test_near_features_are_not_computed_when_the_near_test_is_off() -> None:
    found = features_of(page(f"<p>{PROSE}</p>"), CONTENTSEEN_NEAR_ENABLED=False)
    assert found.near is None and found.fingerprint == text_fingerprint(PROSE)


def test_content_features_are_off_with_the_content_seen_test() -> None:
    with pytest.raises(NotConfigured):
        ContentFeatureExtractor.from_crawler(get_crawler(settings_dict={"CONTENTSEEN_ENABLED": False}))


def test_an_unknown_fingerprint_mode_fails_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="CONTENTSEEN_MODE.*'bytes'"):
        ContentFeatureExtractor.from_crawler(get_crawler(settings_dict={"CONTENTSEEN_MODE": "bytes"}))
