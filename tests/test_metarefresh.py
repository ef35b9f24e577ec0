"""MetaRefreshMiddleware: Scrapy's meta-refresh redirects, skipped only for a
response whose bytes cannot declare one; every decision equals Scrapy's."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as ScrapyMetaRefresh
from scrapy.http import HtmlResponse, Response
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from extensions.addon import WebcrawlerAddon
from extensions.metarefresh import MetaRefreshMiddleware, may_declare_refresh, spells_ascii_as_bytes

URL = "http://a.test/dir/page.html"
REFRESH = '<meta http-equiv="refresh" content="0; url=/next.html">'
PAGES: dict[str, tuple[str, str]] = {  # name -> (html, encoding)
    "none": ("<html><head><title>t</title></head><body><p>text</p></body></html>", "utf-8"),
    "refresh": (f"<html><head>{REFRESH}</head><body>x</body></html>", "utf-8"),
    "upper case": ('<HTML><HEAD><META HTTP-EQUIV="REFRESH" CONTENT="0;URL=/up.html"></HEAD></HTML>', "utf-8"),
    "mixed case": ('<meta Http-Equiv="ReFresh" content="1; URL=/mixed.html">', "utf-8"),
    "content first": ('<meta content="0; url=http://b.test/" http-equiv="refresh">', "utf-8"),
    "in a comment": (f"<html><!-- {REFRESH} --><body>x</body></html>", "utf-8"),
    "in a script": (f"<html><script>var s = '{REFRESH}';</script></html>", "utf-8"),
    "in noscript": (f"<html><noscript>{REFRESH}</noscript></html>", "utf-8"),
    "entity in value": ('<meta http-equiv="&#114;efresh" content="0; url=/ent.html">', "utf-8"),
    "escaped markup": ("<p>&lt;meta http-equiv=&quot;refresh&quot; content=&quot;0; url=/x&quot;&gt;</p>", "utf-8"),
    "word in text": ("<html><body><p>Press F5 to refresh the page.</p></body></html>", "utf-8"),
    "long delay": ('<meta http-equiv="refresh" content="500; url=/late.html">', "utf-8"),
    "no url": ('<meta http-equiv="refresh" content="30">', "utf-8"),
    "after 4096 characters": ("<p>" + "w " * 3000 + "</p>" + REFRESH, "utf-8"),
    "after multi-byte text": ("<p>" + "é" * 3000 + "</p>" + REFRESH, "utf-8"),
    "latin-1": ("<p>café</p>" + REFRESH.replace("/next", "/caf\xe9"), "latin-1"),
    "shift_jis": ("<p>日本語</p>" + REFRESH, "shift_jis"),
    "utf-16": (f"<html><head>{REFRESH}</head></html>", "utf-16"),
    "utf-16 none": ("<html><head><title>t</title></head></html>", "utf-16"),
}


def _response(html: str, encoding: str) -> HtmlResponse:
    headers = {"Content-Type": f"text/html; charset={encoding}"}
    return HtmlResponse(URL, body=html.encode(encoding), headers=headers)


def _outcome(result: Request | Response, response: Response) -> str | None:
    if result is response:
        return None
    assert isinstance(result, Request)
    return result.url


@pytest.fixture(scope="module")
def middlewares() -> tuple[MetaRefreshMiddleware, ScrapyMetaRefresh]:
    crawler = get_crawler()
    return MetaRefreshMiddleware.from_crawler(crawler), ScrapyMetaRefresh.from_crawler(crawler)


@pytest.mark.parametrize("name", PAGES)
def test_every_decision_equals_scrapys(name: str, middlewares: tuple[MetaRefreshMiddleware, ScrapyMetaRefresh]) -> None:
    ours, scrapys = middlewares
    html, encoding = PAGES[name]
    first, second = _response(html, encoding), _response(html, encoding)
    assert _outcome(ours.process_response(Request(URL), first), first) == \
        _outcome(scrapys.process_response(Request(URL), second), second)


def test_the_refreshes_are_followed() -> None:
    """The corpus is not all 'no redirect': these pages do redirect."""
    ours = MetaRefreshMiddleware.from_crawler(get_crawler())
    followed = {}
    for name in ("refresh", "upper case", "content first", "after multi-byte text", "shift_jis", "utf-16"):
        response = _response(*PAGES[name])
        followed[name] = _outcome(ours.process_response(Request(URL), response), response)
    assert followed == {
        "refresh": "http://a.test/next.html", "upper case": "http://a.test/up.html",
        "content first": "http://b.test/", "after multi-byte text": "http://a.test/next.html",
        "shift_jis": "http://a.test/next.html", "utf-16": "http://a.test/next.html",
    }


def test_a_page_without_the_word_is_not_decoded() -> None:
    response = _response(*PAGES["none"])
    assert not may_declare_refresh(response)
    result = MetaRefreshMiddleware.from_crawler(get_crawler()).process_response(Request(URL), response)
    assert result is response
    assert response._cached_ubody is None  # Scrapy's middleware would have decoded the text


def test_encodings_that_do_not_write_ascii_as_its_bytes_go_to_scrapy() -> None:
    assert all(map(spells_ascii_as_bytes, ("utf-8", "latin-1", "cp1252", "shift_jis", "gb18030", "koi8-r")))
    assert not any(map(spells_ascii_as_bytes, ("utf-16", "utf-32", "utf-7", "iso-2022-jp", "cp037", "nonsense")))
    assert may_declare_refresh(_response(*PAGES["utf-16 none"]))  # no look at its bytes



@pytest.mark.parametrize("order", [580, None])
def test_a_project_that_places_scrapys_middleware_keeps_it_and_gets_not_ours(order: int | None) -> None:
    scrapys = "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {scrapys: order}})
    WebcrawlerAddon().update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares[scrapys] == order and MetaRefreshMiddleware not in middlewares


def test_by_default_ours_replaces_scrapys_at_its_place() -> None:
    settings = Settings()
    WebcrawlerAddon().update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares[MetaRefreshMiddleware] == 580 and middlewares[ScrapyMetaRefresh] is None
