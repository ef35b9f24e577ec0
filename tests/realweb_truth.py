"""Ground truth for the real-web test, computed from the files on disk,
independently of the crawler.

:func:`reachable_pages` is a breadth-first search from a scheme's seeds
(each site's root) over the documents :mod:`testweb.realweb` serves: it reads
each HTML file, extracts its links the way a correct crawler follows them,
keeps those inside the served origins of that scheme, applies each site's
robots.txt (Protego, the crawler's product token) and answers every URL as
nginx would (:func:`serve`): 200 for a file, ``index.html`` for a slashed
directory, a 301 to the slashed name for a directory asked without its
slash, 403 for a directory without ``index.html``, 404 otherwise (symlinks
followed, as nginx does by default).

Links followed are those of ``extensions/processors/html_links.py``:
``a``/``area`` ``href``, ``link`` ``href`` with ``rel`` next, prev or
alternate, ``frame``/``iframe`` ``src``, resolved against the first ``<base
href>``, fragments dropped; none from an element with ``rel=nofollow`` or a
page with ``<meta name=robots content=nofollow|none>``. Like Scrapy, a
redirect's target keeps the depth of the URL that redirected. Pages deeper
than the crawl's depth limit (``DEPTH_LIMIT``, 25 by default) are not
reachable. URLs are compared as (scheme, host, port, decoded path, query).

Differences from the crawler, none of which matters on these sites: the
document's encoding is lxml's guess from the bytes (Scrapy weighs the HTTP
header too; every page here is UTF-8), URLs are not canonicalised beyond the
comparison key (no query strings occur), and the URL filter's length,
segment-repeat and query limits are not modelled (the longest URL has 94
characters, no segment repeats, the deepest page is at depth 3).

:func:`resemblance` is Broder's resemblance of two documents' sets of word
3-shingles (lower-cased words of the crawler's own visible text,
``extensions/contentseen/text.py``).
"""

from __future__ import annotations

import mimetypes
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import lxml.html
from protego import Protego

from extensions.contentseen.text import visible_text
from testweb.realweb import RealWeb, Site

PRODUCT_TOKEN = "webcrawler"
DEPTH_LIMIT = 25
HTML_SUFFIXES = (".html", ".htm", ".shtml")
TEXT_SUFFIXES = HTML_SUFFIXES + (".txt",)
LINK_ATTRIBUTES = {"a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src"}
FOLLOWED_LINK_RELS = frozenset({"next", "prev", "alternate"})
_STRIP = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

#: (scheme, host, port, decoded path, query): one spelling per URL.
UrlKey = tuple[str, str, int, str, str]


def url_key(url: str) -> UrlKey:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (parts.scheme, (parts.hostname or "").lower(), port, unquote(parts.path or "/"), parts.query)


@dataclass(frozen=True)
class Answer:
    """What nginx answers for a path: a status, the file served (200) or
    the redirect's target path (301)."""

    status: int
    file: Path | None = None
    location: str | None = None


def serve(site: Site, path: str) -> Answer:
    """nginx's answer for ``path`` (decoded, query-less) on ``site``."""
    relative = path.lstrip("/")
    target = site.document_root / relative
    if path.endswith("/"):
        if not target.is_dir():
            return Answer(404)
        index = target / "index.html"
        return Answer(200, index) if index.is_file() else Answer(403)
    if target.is_dir():
        return Answer(301, location=path + "/")
    return Answer(200, target) if target.is_file() else Answer(404)


def file_of(web: RealWeb, url: str) -> Path | None:
    """The file a URL of ``web`` is served from (following one redirect)."""
    _, host, _, path, _ = url_key(url)
    try:
        site = web.site(host)
    except StopIteration:
        return None
    answer = serve(site, path)
    if answer.status == 301 and answer.location:
        answer = serve(site, answer.location)
    return answer.file if answer.status == 200 else None


def html_links(body: bytes, url: str) -> list[str]:
    """Absolute, fragment-free http(s) links a correct crawler follows."""
    try:
        root = lxml.html.document_fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return []
    if _page_nofollow(root):
        return []
    base = url
    for element in root.iter("base"):
        href = element.get("href")
        if href is not None:
            candidate = _resolve(url, href)
            base = candidate if candidate.startswith(("http://", "https://")) else url
            break
    links = []
    for element in root.iter(*LINK_ATTRIBUTES):
        value = element.get(LINK_ATTRIBUTES[element.tag])
        if value is None:
            continue
        rels = frozenset((element.get("rel") or "").lower().split())
        if element.tag == "link" and not rels & FOLLOWED_LINK_RELS or "nofollow" in rels:
            continue
        link = _resolve(base, value)
        if link.startswith(("http://", "https://")):
            links.append(link)
    return links


def _resolve(base: str, href: str) -> str:
    try:
        return urldefrag(urljoin(base, href.strip(_STRIP).translate(_TAB_NEWLINE)))[0]
    except ValueError:
        return ""


def _page_nofollow(root: lxml.html.HtmlElement) -> bool:
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() == "robots":
            content = {d.strip() for d in (meta.get("content") or "").lower().split(",")}
            if content & {"nofollow", "none"}:
                return True
    return False


@dataclass
class Truth:
    """The outcome of the search: URL key -> (URL, depth) per kind."""

    pages: dict[UrlKey, tuple[str, int]] = field(default_factory=dict)  # 200 and allowed
    redirects: dict[UrlKey, str] = field(default_factory=dict)  # 301 -> target URL
    errors: dict[UrlKey, int] = field(default_factory=dict)  # 403/404, allowed
    disallowed: set[UrlKey] = field(default_factory=set)  # found but robots.txt says no
    too_deep: set[UrlKey] = field(default_factory=set)

    def pages_of(self, host: str) -> set[UrlKey]:
        return {key for key in self.pages if key[1] == host}


def robots_parsers(web: RealWeb) -> dict[str, Protego]:
    return {site.host: Protego.parse(site.robots) for site in web.sites}


def reachable_pages(web: RealWeb, scheme: str = "http", depth_limit: int = DEPTH_LIMIT) -> Truth:
    """Breadth-first search over ``scheme``'s origins from each site's root."""
    robots = robots_parsers(web)
    port = web.port(scheme)
    served = {site.host for site in web.sites if scheme == "http" or site.https}
    truth = Truth()
    queue: deque[tuple[str, int]] = deque((f"{web.origin(host, scheme)}/", 0) for host in sorted(served))
    seen: set[UrlKey] = {url_key(url) for url, _ in queue}
    while queue:
        url, depth = queue.popleft()
        key = url_key(url)
        if not robots[key[1]].can_fetch(url, PRODUCT_TOKEN):
            truth.disallowed.add(key)
            continue
        answer = serve(web.site(key[1]), key[3])
        if answer.status == 301:
            target = urljoin(url, answer.location)
            truth.redirects[key] = target
            links, next_depth = [target], depth  # a redirect keeps the depth
        elif answer.status == 200:
            truth.pages[key] = (url, depth)
            is_html = answer.file.suffix in HTML_SUFFIXES
            links = html_links(answer.file.read_bytes(), url) if is_html else []
            next_depth = depth + 1
        else:
            truth.errors[key] = answer.status
            continue
        for link in links:
            link_key = url_key(link)
            if link_key[0] != scheme or link_key[2] != port or link_key[1] not in served:
                continue
            if link_key in seen:
                continue
            if next_depth > depth_limit:
                truth.too_deep.add(link_key)
                continue
            seen.add(link_key)
            queue.append((link, next_depth))
    return truth


def shingles(text: str, width: int = 3) -> set[tuple[str, ...]]:
    """The set of word ``width``-shingles of ``text`` (lower-cased words);
    a text shorter than ``width`` words is its one shingle."""
    words = text.lower().split()
    if len(words) < width:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + width]) for i in range(len(words) - width + 1)}


def file_shingles(path: Path) -> set[tuple[str, ...]]:
    """Shingles of a served file's visible text (what content-seen compares)."""
    if path.suffix not in TEXT_SUFFIXES and mimetypes.guess_type(path.name)[0] != "text/plain":
        return set()
    return shingles(visible_text(path.read_bytes(), "utf-8"))


def resemblance(first: set[tuple[str, ...]], second: set[tuple[str, ...]]) -> float:
    """|A n B| / |A u B| (1.0 for two empty sets)."""
    union = len(first | second)
    return len(first & second) / union if union else 1.0
