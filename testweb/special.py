"""The hosts that exercise one crawler feature each: special, trap, slow.

``special.test/`` is a seed and links everything a crawler must handle
(redirect chains and a loop, errors, media, the big page, malformed HTML,
other charsets, nofollow, near-duplicates, ``<base>``, frames, link tags,
query and percent-encoding variants) plus what it must not follow
(``<img>``, scripts, stylesheets, ``mailto:``, ``javascript:``, an over-long
URL). Paths are canonical (``/enc/caf%C3%A9.html``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from testweb import media
from testweb.model import (
    SLOW_HOST, SPECIAL_HOST, TRAP_HOST, Link, Page, host_name, html_response, stable_int, words,
)

if TYPE_CHECKING:
    from testweb.model import SiteModel

TRAP_PREFIXES = ("/cal/", "/deep/", "/shop/")
LONG_PATH = "/long/" + "x" * 2100 + ".html"
REDIRECTS = {  # path -> (status, location)
    "/r/301-1": (301, "/r/301-2"),
    "/r/301-2": (301, "/r/302-3"),
    "/r/302-3": (302, "/r/done.html"),
    "/r/t307": (307, "/r/done.html"),
    "/r/t308": (308, "/r/done308.html"),
    "/r/loop-a": (302, "/r/loop-b"),
    "/r/loop-b": (302, "/r/loop-a"),
}
ERRORS = {"/error/500.html": 500, "/error/503.html": 503}
LEAVES = (
    "/r/done.html", "/r/done308.html", "/nf/hidden1.html", "/nf/hidden2.html",
    "/nf/hidden3.html", "/area.html", "/next.html", "/alt.html", "/frame/inner.html",
    "/frame/a.html", "/frame/b.html", "/elsewhere/target.html", "/mal/1.html",
    "/mal/2.html", "/mal/3.html", "/charset/child-latin1.html", "/charset/child-sjis.html",
    "/charset/child-cp1251.html", "/enc/caf%C3%A9.html", "/enc/~user.html",
    "/q.html?a=1&b=2", "/q.html?a=1&a=1&b=2", "/private/x.html",
)
NEWS = "The harbour lantern festival opens on {date} with music in the old market square."
NEAR_DUPLICATES = {"/news/1-print.html": "/news/1.html", "/news/2-copy.html": "/news/2.html"}


def special_page(model: SiteModel, host: str, target: str) -> Page | None:
    if host == SPECIAL_HOST:
        return special_host_page(model, target)
    if host == TRAP_HOST:
        return trap_page(model, target)
    if host == SLOW_HOST:
        return slow_page(model, target)
    return None


def special_root(model: SiteModel) -> Page:
    other = host_name(min(3, model.config.hosts - 1))
    links = [Link(path) for path in REDIRECTS if path not in ("/r/301-2", "/r/302-3", "/r/loop-b")]
    links += [Link(path) for path in ("/r/out", "/missing.html", *ERRORS)]
    links += [Link(path) for path in ("/img/pic.gif", "/img/pic.png", "/img/pic.jpg", "/doc/paper.pdf")]
    links += [Link(path) for path in ("/big.html", "/malformed.html", "/charset/latin1.html",
                                      "/charset/sjis.html", "/charset/cp1251.html")]
    links += [Link("/nf/meta.html"), Link("/nf/hidden1.html", nofollow=True)]
    links += [Link(p) for p in ("/news/1.html", "/news/1-print.html", "/news/2.html", "/news/2-copy.html")]
    links += [Link("/q.html?b=2&a=1"), Link("q.html?a=1&b=2#top"), Link("/q.html?b=2&a=1&a=1")]
    links += [Link("/enc/café.html"), Link("/enc/caf%c3%a9.html"), Link("/enc/%7Euser.html")]
    links += [Link("/based/index.html"), Link("/frames.html"), Link("/private/x.html")]
    links += [Link("mailto:someone@example.com"), Link("javascript:void(0)"), Link(LONG_PATH)]
    links += [Link(model.url(other, "/"))]
    links += [Link("/area.html", tag="area"), Link("/next.html", tag="next"),
              Link("/alt.html", tag="alternate"), Link("/frame/inner.html", tag="iframe")]
    head = '<link rel="stylesheet" href="/style.css"><script src="/app.js"></script>'
    extra = '<img src="/img/unlinked.png" alt="not a link">\n'
    return html_response("special features", "Everything odd.", links, head, extra)


def special_host_page(model: SiteModel, target: str) -> Page | None:
    if target == "/":
        return special_root(model)
    if target in REDIRECTS:
        status, location = REDIRECTS[target]
        return Page(status, location=location, body=b"moved\n", content_type="text/plain")
    if target == "/r/out":
        other = host_name(min(3, model.config.hosts - 1))
        return Page(302, location=model.url(other, f"/p/{model.config.pages - 1}.html"),
                    body=b"moved\n", content_type="text/plain")
    if target in ERRORS:
        return html_response("Server error", "try later", [Link("/")], status=ERRORS[target])
    builder = BUILDERS.get(target)
    if builder:
        return builder(model)
    if target in LEAVES:
        rng = model.rng(SPECIAL_HOST, target)
        return html_response(f"leaf {target}", words(rng, 20), [Link("/")])
    return None


def news_page(path: str) -> Page:
    original = NEAR_DUPLICATES.get(path)
    number = re.search(r"\d+", path).group()  # type: ignore[union-attr]
    date = "2026-03-1" + number if original is None else "2026-03-2" + number
    text = " ".join([NEWS.format(date=date)] * 8)
    return html_response(f"News {number}", text, [Link("/")], near_duplicate_of=original)


def big_page(model: SiteModel) -> Page:
    total = int(model.config.big_page_mb * 1024 * 1024)
    head = b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>big</title></head><body>\n<a href="/">home</a>\n'
    tail = b"</body></html>\n"
    filler = b"<p>" + b"frontier politeness " * 50 + b"</p>\n"
    chunk = filler * (65536 // len(filler))

    def chunks() -> Iterator[bytes]:
        yield head
        left = total - len(head) - len(tail)
        while left > 0:
            piece = chunk if left >= len(chunk) else chunk[:left]
            left -= len(piece)
            yield piece
        yield tail

    return Page(200, stream=(total, chunks), links=(Link("/"),))


MALFORMED = (
    b"<html><head><title>broken</title><body><p>unclosed <b>bold <i>italic\n"
    b'<a href="/mal/1.html">one<a href=/mal/2.html>two\n'
    b"<table><tr><td>cell<div></span></p></td>\n"
    b"\x80\x81\xfe\xff garbage \xc3\x28 bytes \xe2\x82\n"
    b"<a href='/mal/3.html'>three\n<p>never closed <ul><li>item"
)


def malformed_page(model: SiteModel) -> Page:
    links = (Link("/mal/1.html"), Link("/mal/2.html"), Link("/mal/3.html"))
    return Page(200, body=MALFORMED, links=links)


def charset_page(name: str, header: str, meta: str, text: str, encoding: str) -> Page:
    link = Link(f"/charset/child-{name}.html")
    html = (f"<!DOCTYPE html>\n<html><head>{meta}<title>{name}</title></head>\n"
            f"<body><p>{text}</p>\n<a href=\"{link.href}\">{text[:6]}</a>\n</body></html>\n")
    return Page(200, content_type=header, body=html.encode(encoding), links=(link,))


def latin1_page(model: SiteModel) -> Page:
    return charset_page("latin1", "text/html; charset=iso-8859-1", "",
                        "Café crème, naïve Müller à Zürich", "iso-8859-1")


def sjis_page(model: SiteModel) -> Page:
    return charset_page("sjis", "text/html", '<meta charset="shift_jis">',
                        "日本語のページです。クローラーのテスト。", "shift_jis")


def cp1251_page(model: SiteModel) -> Page:
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    return charset_page("cp1251", "text/html; charset=windows-1251", meta,
                        "Привет, мир! Проверка краулера.", "cp1251")


def nofollow_meta_page(model: SiteModel) -> Page:
    links = (Link("/nf/hidden2.html"), Link("/nf/hidden3.html"))
    head = '<meta name="robots" content="nofollow">'
    return html_response("meta nofollow", "do not follow", links, head, nofollow_all=True)


def based_page(model: SiteModel) -> Page:
    base = model.url(SPECIAL_HOST, "/elsewhere/")
    head = f'<base href="{base}">'
    return html_response("base href", "links resolve against base", [Link("target.html")],
                         head, base=base)


def frames_page(model: SiteModel) -> Page:
    body = (b'<!DOCTYPE html>\n<html><head><title>frames</title></head>\n'
            b'<frameset cols="50%,50%"><frame src="/frame/a.html"><frame src="/frame/b.html">'
            b"</frameset></html>\n")
    return Page(200, body=body, links=(Link("/frame/a.html", tag="frame"), Link("/frame/b.html", tag="frame")))


def media_page(kind: str) -> Page:
    content_type, body = media.MEDIA[kind]
    return Page(200, content_type=content_type, body=body)


BUILDERS = {
    "/big.html": big_page,
    "/malformed.html": malformed_page,
    "/charset/latin1.html": latin1_page,
    "/charset/sjis.html": sjis_page,
    "/charset/cp1251.html": cp1251_page,
    "/nf/meta.html": nofollow_meta_page,
    "/based/index.html": based_page,
    "/frames.html": frames_page,
    "/img/pic.gif": lambda model: media_page("gif"),
    "/img/pic.png": lambda model: media_page("png"),
    "/img/pic.jpg": lambda model: media_page("jpeg"),
    "/doc/paper.pdf": lambda model: media_page("pdf"),
    **{path: (lambda model, path=path: news_page(path))
       for path in ("/news/1.html", "/news/1-print.html", "/news/2.html", "/news/2-copy.html")},
}


def trap_page(model: SiteModel, target: str) -> Page | None:
    """Traps: every page links 1-2 new URLs, forever."""
    sid = f"{stable_int(model.config.seed, 'sid'):016x}"
    if target == "/":
        links = [Link("/cal/2026/11"), Link("/deep/a/"), Link(f"/shop/cart.html?sid={sid}")]
        return html_response("traps", "infinite spaces", links)
    match = re.fullmatch(r"/cal/([1-9]\d{0,3})/([1-9]|1[0-2])", target)
    if match:
        year, month = int(match.group(1)), int(match.group(2))
        after = (year + month // 12, month % 12 + 1)
        before = (year - (month == 1), (month - 2) % 12 + 1)
        links = [Link(f"/cal/{y}/{m}") for y, m in (before, after) if 0 < y < 10000]
        return html_response(f"calendar {year}-{month:02d}", "no events", links + [Link("/")])
    if re.fullmatch(r"/deep/(a/)+", target):
        return html_response(f"deep {target.count('/') - 2}", "deeper", [Link("a/")])
    match = re.fullmatch(r"/shop/cart\.html\?sid=([0-9a-f]{16})", target)
    if match:
        following = f"{stable_int(model.config.seed, match.group(1)):016x}"
        return html_response("cart", "your cart is empty", [Link(f"cart.html?sid={following}")])
    return None


def slow_page(model: SiteModel, target: str) -> Page | None:
    delay = model.config.slow_delay
    if target == "/":
        links = [Link(f"/{n}.html") for n in range(1, 4)]
        return html_response("slow host", "patience", links, delay=delay)
    if target in ("/1.html", "/2.html", "/3.html"):
        return html_response(f"slow {target}", "patience", [Link("/")], delay=delay)
    return None
