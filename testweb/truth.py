"""Ground truth: what a correct crawler fetches from the synthetic web.

A breadth-first search over :class:`~testweb.model.SiteModel` with
Scrapy's depth semantics (seeds at depth 0, a link one deeper than its page,
a redirect as deep as the request it answers, nothing deeper than
``depth_limit`` requested), robots.txt fetched as RFC 9309 says
(:func:`fetch_robots`) and read with Protego for the crawler's user agent,
and the crawler's link rules (no links from non-2xx or non-HTML responses,
none marked nofollow, none over 2083 characters, http(s) only).

The ``robots-<variant>.test`` hosts (:mod:`testweb.robots_hosts`) are
linked from nowhere; pass their roots as ``seeds`` to get what a crawl seeded
with them fetches, e.g. ``compute_truth(model, [model.url("robots-500.test",
"/")], robots_5xx="disallow")``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from protego import Protego

from extensions import defaults
from extensions.urls.canonical import strip_params
from testweb.model import (
    MIRROR_HOST, USER_AGENT, Page, SiteModel, canonical_url,
)
from testweb.special import TRAP_PREFIXES

MAX_URL_LENGTH = 2083
MAX_REDIRECTS = 20
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
ROBOTS_MAX_BYTES = 512000  # RFC 9309 2.5: parse at least 500 KiB; we parse exactly that
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass
class Truth:
    """Canonical URLs by what a correct crawl does with them."""

    fetched: set[str] = field(default_factory=set)
    robots: set[str] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)
    nofollow: set[str] = field(default_factory=set)
    traps: set[str] = field(default_factory=set)
    duplicates: dict[str, str] = field(default_factory=dict)
    near_duplicates: dict[str, str] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)

    @property
    def regular(self) -> set[str]:
        return self.fetched - self.traps

    @property
    def regular_max_depth(self) -> int:
        return max((self.depth[url] for url in self.regular), default=0)

    def summary(self) -> dict[str, object]:
        """Counts and sorted URL lists, for the CLI's JSON."""
        lists = {name: sorted(getattr(self, name))
                 for name in ("fetched", "robots", "disallowed", "nofollow", "traps")}
        counts = {name: len(urls) for name, urls in lists.items()}
        counts.update(regular=len(self.regular), duplicates=len(self.duplicates),
                      near_duplicates=len(self.near_duplicates))
        return {"counts": counts, "regular_max_depth": self.regular_max_depth, **lists,
                "duplicates": self.duplicates, "near_duplicates": self.near_duplicates,
                "depth": self.depth}


@dataclass
class RobotsFetch:
    """What an RFC 9309 crawler gets for one host's robots.txt.

    ``status`` is the last answer's (0 when redirects looped or went on past
    :data:`ROBOTS_MAX_REDIRECTS`: unavailable, which RFC 9309 treats like a
    4xx); ``text`` the rules to parse, set only for a 2xx (empty for a
    non-text body); ``urls`` every URL fetched, ``/robots.txt`` first.
    """

    status: int
    text: str | None
    urls: list[str]

    @property
    def unreachable(self) -> bool:
        """A 5xx: the crawler's ``robots_5xx`` policy decides."""
        return self.status >= 500


def fetch_robots(model: SiteModel, host: str) -> RobotsFetch:
    """``host``'s robots.txt as RFC 9309 reads it: up to five redirects (to any
    host), a loop is unavailable, 4xx means no rules, a 2xx body is cut at
    :data:`ROBOTS_MAX_BYTES` and loses a UTF-8 BOM, a non-``text/*`` body is
    empty. A server-side 503 (robots-flaky.test) is not modelled: its 200."""
    url = canonical_url(model.url(host, "/robots.txt"))
    urls: list[str] = []
    while url not in urls and len(urls) <= ROBOTS_MAX_REDIRECTS:
        urls.append(url)
        parts = urlsplit(url)
        page = model.page(parts.hostname or "", urlunsplit(("", "", parts.path or "/", parts.query, "")))
        if page.status in REDIRECT_STATUSES and page.location:
            url = canonical_url(urljoin(url, page.location))
            continue
        if not 200 <= page.status < 300:
            return RobotsFetch(page.status, None, urls)
        if not page.content_type.startswith("text/"):
            return RobotsFetch(page.status, "", urls)
        body = page.body[:ROBOTS_MAX_BYTES].removeprefix(UTF8_BOM)
        return RobotsFetch(page.status, body.decode("utf-8", "replace"), urls)
    return RobotsFetch(0, None, urls)


class RobotsRules:
    """robots.txt per host, fetched from the model, cached like a crawler does."""

    def __init__(self, model: SiteModel, robots_5xx: str) -> None:
        if robots_5xx not in ("allow", "disallow"):
            raise ValueError(f"robots_5xx must be 'allow' or 'disallow', not {robots_5xx!r}")
        self.model, self.robots_5xx = model, robots_5xx
        self.parsers: dict[str, Protego | bool] = {}
        self.fetches: dict[str, RobotsFetch] = {}

    def allowed(self, url: str) -> bool:
        host = urlsplit(url).hostname or ""
        if host not in self.parsers:
            self.parsers[host] = self._load(host)
        rules = self.parsers[host]
        return rules if isinstance(rules, bool) else rules.can_fetch(url, USER_AGENT)

    def _load(self, host: str) -> Protego | bool:
        fetch = self.fetches[host] = fetch_robots(self.model, host)
        if fetch.unreachable:
            return self.robots_5xx == "allow"
        if fetch.text is None:
            return True
        return Protego.parse(fetch.text)


def page_links(page: Page, url: str, follow_nofollow: bool) -> tuple[list[str], list[str]]:
    """(followed, nofollow) absolute links of a 2xx HTML page."""
    if not (200 <= page.status < 300 and page.is_html):
        return [], []
    base = page.base or url
    followed, skipped = [], []
    for link in page.links:
        absolute = urljoin(base, link.href.strip())
        blocked = (link.nofollow or page.nofollow_all) and not follow_nofollow
        (skipped if blocked else followed).append(absolute)
    return followed, skipped


def fetchable(url: str) -> bool:
    return len(url) <= MAX_URL_LENGTH and urlsplit(url).scheme in ("http", "https")


def compute_truth(model: SiteModel, seeds: list[str] | None = None, depth_limit: int = 10,
                  robots_5xx: str = "allow", follow_nofollow: bool = False) -> Truth:
    """Breadth-first search from ``seeds`` (default: the model's seed URLs)."""
    truth, robots = Truth(), RobotsRules(model, robots_5xx)
    seen: set[str] = set()
    nofollow_targets: set[str] = set()
    queue: deque[tuple[str, int, int]] = deque()  # (url, depth, redirects so far)
    for seed in seeds if seeds is not None else model.seeds:
        enqueue(queue, seen, seed, 0, 0)
    while queue:
        url, depth, hops = queue.popleft()
        parts = urlsplit(url)
        host = parts.hostname or ""
        truth.robots.add(f"{parts.scheme}://{parts.netloc}/robots.txt")
        allowed = robots.allowed(url)
        truth.robots.update(robots.fetches[host].urls)  # with redirect hops
        if not allowed:
            truth.disallowed.add(url)
            continue
        truth.fetched.add(url)
        truth.depth[url] = depth
        target = url[len(parts.scheme) + 3 + len(parts.netloc):] or "/"
        page = model.page(host, target)
        classify(model, truth, url, host, target, page)
        if page.status in REDIRECT_STATUSES and page.location and hops < MAX_REDIRECTS:
            enqueue(queue, seen, urljoin(url, page.location), depth, hops + 1)
            continue
        followed, skipped = page_links(page, url, follow_nofollow)
        if depth < depth_limit:
            nofollow_targets.update(c for c in map(safe_canonical, skipped) if c)
            for link in followed:
                enqueue(queue, seen, link, depth + 1, 0)
    truth.nofollow = nofollow_targets - truth.fetched - truth.disallowed
    truth.duplicates = {u: o for u, o in truth.duplicates.items() if o in truth.fetched}
    truth.near_duplicates = {u: o for u, o in truth.near_duplicates.items() if o in truth.fetched}
    return truth


#: Query arguments a crawler strips from links (the crawler's default
#: ``LINKS_STRIP_PARAMS``): a session id in a URL is a trap, not a page.
STRIPPED_PARAMS = frozenset(defaults.LINKS_STRIP_PARAMS)


def fetched_html_pages(model: SiteModel, depth_limit: int = 8) -> list[tuple[str, bytes, str]]:
    """``(url, body, charset)`` of every 200 HTML page a crawl of ``model``
    to ``depth_limit`` fetches, in URL order (corpora for tests and benches)."""
    found = []
    for url in sorted(compute_truth(model, depth_limit=depth_limit).fetched):
        parts = urlsplit(url)
        page = model.page(parts.hostname, parts.path + (f"?{parts.query}" if parts.query else ""))
        if page.status == 200 and page.body and page.content_type.startswith("text/html"):
            found.append((url, page.body, page.content_type.partition("charset=")[2] or "utf-8"))
    return found


def safe_canonical(url: str) -> str | None:
    if not fetchable(url):
        return None
    try:
        canonical = canonical_url(url)
    except ValueError:
        return None
    return strip_params(canonical, STRIPPED_PARAMS) if "?" in canonical or ";" in canonical else canonical


def enqueue(queue: deque[tuple[str, int, int]], seen: set[str], url: str, depth: int, hops: int) -> None:
    canonical = safe_canonical(url)
    if canonical and canonical not in seen:
        seen.add(canonical)
        queue.append((canonical, depth, hops))


def classify(model: SiteModel, truth: Truth, url: str, host: str, target: str, page: Page) -> None:
    """Record trap, duplicate and near-duplicate pages."""
    if host == "trap.test" and target.startswith(TRAP_PREFIXES):
        truth.traps.add(url)
    if host == MIRROR_HOST and page.status == 200:
        truth.duplicates[url] = model.url(model.mirrored_host, target)
    if page.near_duplicate_of:
        truth.near_duplicates[url] = model.url(host, page.near_duplicate_of)
