"""Hosts whose robots.txt is one RFC 9309 edge case each: ``robots-<variant>.test``.

No page of the rest of the web links to them: tests seed them explicitly
(``web.url(host)`` for each of ``web.robots_hosts()``), so they never change
the default ground truth. Every host has the same small site: ``/`` links
``/allowed.html``, ``/private/secret.html`` and ``/p/1.html`` ..
``/p/4.html``; each of those links back to ``/``.

What ``/robots.txt`` answers (:data:`PRIVATE` is ``User-agent: *`` /
``Disallow: /private/``), and what a crawler following RFC 9309 makes of it
(:func:`testweb.truth.fetch_robots`):

* ``bom``: :data:`PRIVATE` with a UTF-8 BOM and CRLF line ends. The BOM is
  stripped, so ``/private/`` is disallowed (Protego alone misses the group).
* ``big``: about 600 KiB: ``User-agent: *``, ``Disallow: /private/``,
  comment lines, then ``Disallow: /p/`` after :data:`BIG_ROBOTS_LATE_RULE_AT`
  (past the 500 KiB = 512000-byte parse limit), then more comments. A crawler
  that cuts at 512000 bytes fetches ``/p/``; one that parses it all does not.
* ``html``: 200, ``Content-Type: image/png``, a PNG whose ``tEXt`` chunk
  holds :data:`PRIVATE` lines. Not text, so read as empty: all allowed (a
  crawler that parses the bytes anyway loses ``/private/``).
* ``redirect``: 301 to ``/real-robots.txt`` (:data:`PRIVATE`).
* ``redirect5``: exactly five redirects (301, 302, 307 to an absolute URL,
  308, 301) via ``/robots-1.txt`` .. ``/robots-4.txt`` to ``/robots-5.txt``
  (:data:`PRIVATE`): within the five an RFC 9309 crawler follows.
* ``loop``: ``/robots.txt`` 302 to ``/robots2.txt`` 302 back again, forever:
  unavailable, like a 4xx, so all allowed.
* ``401``, ``403``: that status. RFC 9309 says 4xx means no restrictions.
* ``500``: always 500; the crawler's 5xx policy decides (``robots_5xx``).
* ``flaky``: :data:`PRIVATE`, but the server (not this pure model; see
  :meth:`testweb.server.WebServer.flaky_robots`) answers 503 to the
  first ``config.robots_flaky_failures`` requests. The ground truth assumes
  the crawler retries until it gets the 200.
* ``agents``: groups ``WebCrawler-News`` (``Disallow: /allowed.html``),
  ``webcrawler`` (``Disallow: /private/``), ``otherbot`` (``Disallow: /``)
  and ``*`` (``Disallow: /p/``). The user agent ``webcrawler/0.1 (...)`` has
  the product token ``webcrawler``, which matches exactly (case-insensitive)
  only the ``webcrawler`` group: it loses ``/private/`` alone, and may fetch
  ``/allowed.html`` and ``/p/``.
* ``delay``: ``*`` has ``Crawl-delay: 2``, ``webcrawler`` has
  ``Crawl-delay: 0.5``; both disallow ``/private/``.
* ``sitemap``: :data:`PRIVATE` between two ``Sitemap:`` lines (absolute
  URLs, with the port). ``/sitemap.xml`` lists ``/s/1.html`` .. ``/s/3.html``,
  which nothing links; ``/sitemap-pages.xml`` lists ``/allowed.html`` and
  ``/private/secret.html`` (still disallowed when found in a sitemap).
* ``slow``: :data:`PRIVATE`, delayed by ``config.slow_delay`` (pages are
  not), so a test can check that concurrent requests wait for one fetch.
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache
from typing import TYPE_CHECKING

from testweb import media
from testweb.model import Link, Page, html_response, words

if TYPE_CHECKING:
    from testweb.model import SiteModel

PRIVATE = "User-agent: *\nDisallow: /private/\n"
SITE_PAGES = 4
LEAVES = ("/allowed.html", "/private/secret.html", *(f"/p/{n}.html" for n in range(1, SITE_PAGES + 1)))
SITEMAP_PAGES = tuple(f"/s/{n}.html" for n in range(1, 4))
BIG_ROBOTS_BYTES = 600 * 1024
BIG_ROBOTS_LATE_RULE_AT = 540_000  # past 512000 and 524288, the cuts crawlers use
REDIRECT5_CHAIN = {  # path -> (status, location); the 307 spells its location absolute
    "/robots.txt": (301, "/robots-1.txt"),
    "/robots-1.txt": (302, "/robots-2.txt"),
    "/robots-2.txt": (307, "/robots-3.txt"),
    "/robots-3.txt": (308, "/robots-4.txt"),
    "/robots-4.txt": (301, "/robots-5.txt"),
}
AGENTS = (
    "User-agent: WebCrawler-News\nDisallow: /allowed.html\n\n"
    "User-agent: webcrawler\nDisallow: /private/\n\n"
    "User-agent: otherbot\nDisallow: /\n\n"
    "User-agent: *\nDisallow: /p/\n"
)
DELAY = (
    "User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n\n"
    "User-agent: webcrawler\nCrawl-delay: 0.5\nDisallow: /private/\n"
)


def variant_of(host: str) -> str:
    return host.removeprefix("robots-").removesuffix(".test")


def robots_host_page(model: SiteModel, host: str, target: str) -> Page | None:
    """The page at ``target`` of robots host ``host``; ``None`` is a 404."""
    variant = variant_of(host)
    robots = robots_files(model, host, variant).get(target)
    if robots is not None:
        return robots
    if target == "/":
        links = [Link(path) for path in LEAVES]
        return html_response(f"{host} home", words(model.rng(host, target), 30), links)
    if target in LEAVES or (variant == "sitemap" and target in SITEMAP_PAGES):
        return html_response(f"{host} {target}", words(model.rng(host, target), 20), [Link("/")])
    if variant == "sitemap" and target in ("/sitemap.xml", "/sitemap-pages.xml"):
        paths = SITEMAP_PAGES if target == "/sitemap.xml" else ("/allowed.html", "/private/secret.html")
        return Page(200, "application/xml", urlset([model.url(host, path) for path in paths]))
    return None


def robots_files(model: SiteModel, host: str, variant: str) -> dict[str, Page]:
    """Every robots file ``host`` serves, ``/robots.txt`` and redirect targets."""
    if variant == "redirect":
        return {"/robots.txt": redirect(301, "/real-robots.txt"), "/real-robots.txt": text(PRIVATE)}
    if variant == "redirect5":
        files = {path: redirect(status, model.url(host, location) if status == 307 else location)
                 for path, (status, location) in REDIRECT5_CHAIN.items()}
        return {**files, "/robots-5.txt": text(PRIVATE)}
    if variant == "loop":
        return {"/robots.txt": redirect(302, "/robots2.txt"), "/robots2.txt": redirect(302, "/robots.txt")}
    return {"/robots.txt": single_robots(model, host, variant)}


def single_robots(model: SiteModel, host: str, variant: str) -> Page:
    if variant in ("401", "403", "500"):
        return Page(int(variant), "text/plain", f"robots.txt: {variant}\n".encode())
    if variant == "bom":
        return Page(200, "text/plain", b"\xef\xbb\xbf" + PRIVATE.replace("\n", "\r\n").encode())
    if variant == "big":
        return Page(200, "text/plain", big_robots())
    if variant == "html":
        return Page(200, "image/png", png_with_text(PRIVATE))
    if variant == "agents":
        return text(AGENTS)
    if variant == "delay":
        return text(DELAY)
    if variant == "sitemap":
        return text(f"Sitemap: {model.url(host, '/sitemap.xml')}\n\n{PRIVATE}\n"
                    f"Sitemap: {model.url(host, '/sitemap-pages.xml')}\n")
    if variant == "slow":
        return Page(200, "text/plain", PRIVATE.encode(), delay=model.config.slow_delay)
    return text(PRIVATE)  # flaky: the server answers 503 first


def text(body: str) -> Page:
    return Page(200, "text/plain", body.encode())


def redirect(status: int, location: str) -> Page:
    return Page(status, "text/plain", b"moved\n", location=location)


@lru_cache(maxsize=1)
def big_robots() -> bytes:
    """:data:`PRIVATE`, comments, ``Disallow: /p/`` past the cut, comments."""
    def padding(first: int, until: int) -> list[bytes]:
        lines, size, number = [], 0, first
        while size < until:
            line = f"# padding {number:06d}: comments do not end a group, rules follow\n".encode()
            lines.append(line)
            size, number = size + len(line), number + 1
        return lines

    head = PRIVATE.encode()
    before = padding(0, BIG_ROBOTS_LATE_RULE_AT - len(head))
    late = b"Disallow: /p/\n"
    used = len(head) + sum(map(len, before)) + len(late)
    after = padding(len(before), BIG_ROBOTS_BYTES - used)
    return b"".join([head, *before, late, *after])


def png_with_text(message: str) -> bytes:
    """media's PNG with a ``tEXt`` chunk holding ``message`` after ``IHDR``."""
    image = media.png(8, 8)
    ihdr_end = 8 + 4 + 4 + 13 + 4  # signature, then length, type, data and CRC of IHDR
    data = b"Comment\x00\n" + message.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return image[:ihdr_end] + chunk + image[ihdr_end:]


def urlset(locations: list[str]) -> bytes:
    """A sitemaps.org ``urlset`` of ``locations``."""
    entries = "".join(f"  <url><loc>{location}</loc></url>\n" for location in locations)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</urlset>\n").encode()


def sitemap_locations(model: SiteModel, host: str = "robots-sitemap.test") -> list[str]:
    """The URLs robots-sitemap.test's two sitemaps list, for seeding a truth."""
    return [model.url(host, path) for path in (*SITEMAP_PAGES, "/allowed.html", "/private/secret.html")]
