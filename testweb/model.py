"""The synthetic web as a pure function of (config, port, host, path).

Every byte the server sends comes from here, so the ground truth
(:mod:`testweb.truth`) can be computed without a server and a crawl can
be checked against it. Randomness is ``random.Random(stable_int(...))`` seeded
from a blake2b digest, never ``hash()``, so the same config and port give the
same bytes in every process.

Hosts (see :class:`SiteModel`):

* ``h0000.test`` ... ``h{hosts-1}.test``: regular hosts. Host ``i``'s root
  links to the roots of hosts ``4i+1 .. 4i+4`` and to pages ``/p/0..3.html``;
  page ``N`` links to pages ``4(N+1) .. 4(N+1)+3``; the rest of the
  ``links`` outgoing links are random (:meth:`SiteModel.random_links`):
  mostly to the same host in several relative spellings, on page ``N``
  mostly to pages within 3 of ``N``, as real sites link what is near;
  some to other hosts in several absolute spellings, search pages with
  shuffled and repeated query arguments, fragments. Both trees have
  fan-out 4, so every regular page is a few hops from ``h0000.test/``.
  Each root also links ``/private/secret.html`` and ``/private/ok.html``.
  Every HTML page of a regular host opens with the host's navigation menu
  (:meth:`SiteModel.navigation`), as real sites' chrome does: a ``<nav>``
  linking home (``/``) and the section pages ``/p/0.html ..
  /p/{nav_sections-1}.html``, the same hrefs in the same order on every
  page, with anchor text drawn from the seed. It is boilerplate (the same
  on every page, so not a sign of duplication), and with the local links
  it gives the link graph real sites' locality: neighbouring pages' link
  lists share the menu, which BVGraph's reference compression copies.
* robots.txt of regular host ``i`` (:func:`robots_variant`): the last host
  answers 503; hosts 3, 13 and 23 have ``Crawl-delay: config.crawl_delay``;
  the others cycle through ``i % 5``: 0 ``*`` disallows ``/private/``;
  1 404; 2 a ``webcrawler`` group disallowing ``/private/`` and a ``*``
  group disallowing ``/p/`` (the wrong group loses the host); 3 ``Allow:
  /private/ok.html`` before ``Disallow: /private/``; 4 a ``*`` group and a
  stricter ``webcrawler`` group that also disallows the leaf page
  ``/p/{pages-1}.html``.
* ``special.test`` (:mod:`testweb.special`): redirects, errors, media,
  the big page, malformed HTML, charsets, nofollow, near-duplicates, link
  tags, ``<base>``, frames, query order and percent-encoding variants.
* ``trap.test``: an infinite calendar, ever deeper paths, session ids.
* ``mirror0.test``: byte-identical copy of ``h0001.test``.
* ``slow.test``: every page but robots.txt is delayed by ``slow_delay``.
* ``robots-<variant>.test`` (:mod:`testweb.robots_hosts`): one RFC 9309
  robots.txt edge case each (BOM, over 500 KiB, non-text, redirects, a loop,
  401/403/500, a flaky 503, user-agent groups, Crawl-delay, Sitemap, a slow
  robots.txt). Linked from nowhere: tests seed them, so they never change the
  default ground truth.
* ``pl0000.test`` ... (:mod:`testweb.powerlaw`): only when
  ``powerlaw_pages`` > 0, a Zipf-skewed link graph for AOPIC's importance
  benchmark; linked from nowhere (seeded with its own roots).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from typing import Callable, Iterator, NamedTuple
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

USER_AGENT = "webcrawler/0.1 (+https://github.com/webcrawler/webcrawler)"
SPECIAL_HOST = "special.test"
TRAP_HOST = "trap.test"
MIRROR_HOST = "mirror0.test"
SLOW_HOST = "slow.test"
ROBOTS_VARIANTS = ("bom", "big", "html", "redirect", "redirect5", "loop", "401", "403", "500",
                   "flaky", "agents", "delay", "sitemap", "slow")
ROBOTS_HOSTS = tuple(f"robots-{variant}.test" for variant in ROBOTS_VARIANTS)
ROBOTS_FLAKY_HOST = "robots-flaky.test"
TREE_FANOUT = 4
CRAWL_DELAY_HOSTS = (3, 13, 23)
SEARCH_VALUES = 3  # search pages per host: SEARCH_VALUES ** 2
# A page's random links (see random_links): real sites link mostly within
# themselves, and to pages near the one linking.
SAME_HOST_SHARE = 0.65  # to a page of its host
CROSS_HOST_SHARE = 0.15  # to another regular host
SEARCH_SHARE = 0.12  # to a search page (the rest: a page of its host with a fragment)
LOCAL_SHARE = 0.7  # of a tree page's same-host links: to a neighbour, not any page
LOCAL_SPAN = 3  # how far a neighbour is, in page numbers either side

WORDS = (
    "frontier queue host politeness crawler page link robots seen content "
    "fingerprint document server mercator heap back front priority depth "
    "archive index web spider fetch parse url scheme path query fragment "
    "graph node edge river mountain forest harbour lantern meadow copper "
    "violet orbit signal quiet amber garden winter silver thunder morning"
).split()


@dataclass(frozen=True)
class WebConfig:
    """What the synthetic web looks like; equal configs give equal bytes."""

    hosts: int = 30
    pages: int = 30
    links: int = 8
    seed: int = 1
    slow_delay: float = 1.0
    crawl_delay: float = 0.2
    big_page_mb: float = 5.5
    robots_flaky_failures: int = 2  # 503s robots-flaky.test answers before its robots.txt
    powerlaw_pages: int = 0  # pages of the power-law hosts pl0000.test...; 0: none
    nav_sections: int = 8  # section pages in each regular host's menu; 0: no menu
    weight: str = "tiny"  # "tiny": 40-90 words a page; "real": sizes and structure of real pages (testweb.heavy)

    def cli_args(self) -> list[str]:
        """The ``serve``/``truth`` command-line flags for this config."""
        return [
            "--hosts", str(self.hosts), "--pages", str(self.pages),
            "--links", str(self.links), "--seed", str(self.seed),
            "--slow-delay", str(self.slow_delay), "--crawl-delay", str(self.crawl_delay),
            "--big-page-mb", str(self.big_page_mb),
            "--robots-flaky-failures", str(self.robots_flaky_failures),
            "--powerlaw-pages", str(self.powerlaw_pages),
            "--nav-sections", str(self.nav_sections), "--weight", self.weight,
        ]


class Link(NamedTuple):
    """One link as written in a page; ``tag`` says how it is rendered."""

    href: str
    nofollow: bool = False
    tag: str = "a"  # a, area, next, prev, alternate, iframe, frame


@dataclass
class Page:
    """One response. ``links`` are what a crawler extracts (2xx HTML only)."""

    status: int
    content_type: str = "text/html; charset=utf-8"
    body: bytes = b""
    links: tuple[Link, ...] = ()
    base: str | None = None
    nofollow_all: bool = False
    location: str | None = None
    delay: float = 0.0
    # (length, chunk iterator factory) for bodies too big to keep around.
    stream: tuple[int, Callable[[], Iterator[bytes]]] | None = None
    near_duplicate_of: str | None = None  # a path on the same host

    @property
    def length(self) -> int:
        return self.stream[0] if self.stream else len(self.body)

    @property
    def is_html(self) -> bool:
        return self.content_type.startswith("text/html")


def stable_int(*parts: object) -> int:
    """A process-independent 64-bit hash of ``parts`` (unlike ``hash()``)."""
    data = "\x1f".join(map(str, parts)).encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def canonical_url(url: str) -> str:
    """w3lib's canonical form, lower-case host, without ``:80``."""
    canonical = canonicalize_url(url)
    parts = urlsplit(canonical)
    if parts.port == 80 and parts.scheme == "http":
        canonical = canonical.replace(parts.netloc, parts.netloc.rpartition(":")[0], 1)
    return canonical


def host_name(index: int) -> str:
    return f"h{index:04d}.test"


def host_index(host: str) -> int | None:
    match = re.fullmatch(r"h(\d{4,})\.test", host)
    return int(match.group(1)) if match else None


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def render_link(link: Link, text: str = "") -> str:
    """The HTML for one link; the tag decides which extractor rule finds it."""
    href = escape(link.href, quote=True)
    rel = ' rel="nofollow"' if link.nofollow else ""
    label = escape(text or link.href)
    if link.tag == "a":
        return f'<a href="{href}"{rel}>{label}</a>'
    if link.tag == "area":
        return f'<map name="m"><area shape="rect" coords="0,0,9,9" href="{href}"{rel}></map>'
    if link.tag in ("next", "prev", "alternate"):
        return f'<link rel="{link.tag}" href="{href}">'
    if link.tag == "iframe":
        return f'<iframe src="{href}"></iframe>'
    raise ValueError(f"cannot render a {link.tag!r} link inline")


class NavItem(NamedTuple):
    """One entry of a site's navigation menu: where it goes, what it says."""

    href: str
    label: str


def render_nav(nav: tuple[NavItem, ...] | list[NavItem]) -> str:
    """A ``<nav>`` menu, empty for no items."""
    if not nav:
        return ""
    items = "".join(f"<li>{render_link(Link(item.href), item.label)}</li>" for item in nav)
    return f'<nav class="site-menu"><ul>{items}</ul></nav>\n'


def html_page(title: str, text: str, links: tuple[Link, ...] | list[Link],
              head: str = "", extra: str = "", nav: tuple[NavItem, ...] = ()) -> bytes:
    """A small well-formed UTF-8 page with ``links`` in a list, after the
    ``nav`` menu if there is one."""
    items = "".join(f"<li>{render_link(link)}</li>\n" for link in links)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>{head}</head>\n<body>{render_nav(nav)}<h1>{escape(title)}</h1>\n"
        f"<p>{escape(text)}</p>\n<ul>\n{items}</ul>\n{extra}</body></html>\n"
    ).encode("utf-8")


def html_response(title: str, text: str, links: tuple[Link, ...] | list[Link], head: str = "",
                  extra: str = "", status: int = 200, nav: tuple[NavItem, ...] = (),
                  **fields: object) -> Page:
    """A page rendered by :func:`html_page` that knows its own links (the
    menu's first, in document order)."""
    body = html_page(title, text, tuple(links), head, extra, nav)
    links = tuple(Link(item.href) for item in nav) + tuple(links)
    return Page(status, body=body, links=links, **fields)  # type: ignore[arg-type]


def robots_variant(index: int, hosts: int) -> str:
    """Which robots.txt regular host ``index`` serves (see module docstring)."""
    if hosts > 1 and index == hosts - 1:
        return "5xx"
    if index in CRAWL_DELAY_HOSTS:
        return "crawl-delay"
    return ("private", "404", "groups", "allow", "strict")[index % 5]


def robots_page(variant: str, config: WebConfig) -> Page:
    if variant == "404":
        return Page(404, "text/plain", b"no robots.txt here\n")
    if variant == "5xx":
        return Page(503, "text/plain", b"robots.txt temporarily unavailable\n")
    text = {
        "private": "User-agent: *\nDisallow: /private/\n",
        "crawl-delay": f"User-agent: *\nCrawl-delay: {config.crawl_delay}\nDisallow: /private/\n",
        "groups": "User-agent: webcrawler\nDisallow: /private/\n\nUser-agent: *\nDisallow: /p/\n",
        "allow": "User-agent: *\nAllow: /private/ok.html\nDisallow: /private/\n",
        "strict": (f"User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n\n"
                   f"User-agent: webcrawler\nDisallow: /private/\n"
                   f"Disallow: /p/{config.pages - 1}.html\n"),
        "empty": "",
    }[variant]
    return Page(200, "text/plain", text.encode())


@dataclass
class SiteModel:
    """All hosts of one synthetic web, bound to the port links spell out."""

    config: WebConfig
    port: int
    hosts: list[str] = field(init=False)

    def __post_init__(self) -> None:
        from testweb import powerlaw  # builds on this module

        regular = [host_name(i) for i in range(self.config.hosts)]
        self.robots_hosts = list(ROBOTS_HOSTS)
        self.powerlaw_hosts = powerlaw.host_names(self.config.powerlaw_pages)
        self.hosts = (regular + [SPECIAL_HOST, TRAP_HOST, MIRROR_HOST, SLOW_HOST] + self.robots_hosts
                      + self.powerlaw_hosts)
        self._known = frozenset(self.hosts)
        self._robots_known = frozenset(self.robots_hosts)
        self._powerlaw_known = frozenset(self.powerlaw_hosts)
        self.mirrored_host = host_name(1 if self.config.hosts > 1 else 0)
        cached = 8192 if self.config.weight == "tiny" else 1024  # real pages weigh ~55 KB on average
        self.page = lru_cache(maxsize=cached)(self._page)  # type: ignore[method-assign]

    def origin(self, host: str) -> str:
        return f"http://{host}" if self.port == 80 else f"http://{host}:{self.port}"

    def url(self, host: str, path: str) -> str:
        return self.origin(host) + path

    @property
    def seeds(self) -> list[str]:
        hosts = [host_name(0)] + ([host_name(1)] if self.config.hosts > 1 else []) + [SPECIAL_HOST]
        return [self.url(host, "/") for host in hosts]

    def knows(self, host: str) -> bool:
        return host in self._known

    def rng(self, host: str, path: str) -> random.Random:
        return random.Random(stable_int(self.config.seed, host, path))

    def _page(self, host: str, target: str) -> Page:
        """The page at canonical ``target`` (path and query) of ``host``."""
        from testweb import powerlaw, robots_hosts, special  # all build on this module

        if host == MIRROR_HOST:
            host = self.mirrored_host
        if host not in self._known:
            return not_found(target)
        if host in self._robots_known:  # some of them serve more than one robots file
            return robots_hosts.robots_host_page(self, host, target) or not_found(target)
        if host in self._powerlaw_known:  # robots.txt included: a 404
            return powerlaw.powerlaw_page(self, host, target) or not_found(target)
        if target == "/robots.txt":
            return self.robots(host)
        index = host_index(host)
        if index is not None:
            return self.regular_page(index, target) or not_found(target)
        return special.special_page(self, host, target) or not_found(target)

    def robots(self, host: str) -> Page:
        """The first answer for ``host``'s ``/robots.txt`` (redirects not followed)."""
        if host in self._robots_known:
            return self.page(host, "/robots.txt")
        index = host_index(host)
        if index is not None:
            return robots_page(robots_variant(index, self.config.hosts), self.config)
        if host == SPECIAL_HOST:
            return Page(200, "text/plain", (
                "User-agent: *\nDisallow: /news/\n\n"
                "User-agent: webcrawler\nDisallow: /private/\n").encode())
        if host == SLOW_HOST:
            return robots_page("empty", self.config)
        return robots_page("404", self.config)

    # -- regular hosts ----------------------------------------------------

    def regular_page(self, index: int, target: str) -> Page | None:
        host = host_name(index)
        if target == "/":
            return self.root_page(index)
        match = re.fullmatch(r"/p/(\d+)\.html", target)
        if match and int(match.group(1)) < self.config.pages and match.group(1) == str(int(match.group(1))):
            return self.tree_page(index, int(match.group(1)))
        if target in ("/private/secret.html", "/private/ok.html"):
            rng = self.rng(host, target)
            return html_response(f"{host} private", words(rng, 30), [Link("/")], nav=self.navigation(index))
        match = re.fullmatch(r"/s/search\.html\?a=(\d)&a=\1&b=(\d)", target)
        if match and max(int(match.group(1)), int(match.group(2))) < SEARCH_VALUES:
            rng = self.rng(host, target)
            links = self.random_links(rng, index, "/s/", 2, search=False)
            return html_response(f"{host} search {target}", words(rng, 25), links, nav=self.navigation(index))
        return None

    def root_page(self, index: int) -> Page:
        host, config = host_name(index), self.config
        rng = self.rng(host, "/")
        children = range(TREE_FANOUT * index + 1, TREE_FANOUT * index + TREE_FANOUT + 1)
        links = [Link(self.url(host_name(c), "/")) for c in children if c < config.hosts]
        links += [Link(f"p/{n}.html") for n in range(min(TREE_FANOUT, config.pages))]
        links += [Link("/private/secret.html"), Link("private/ok.html")]
        if index == 0:
            links += [Link(self.url(h, "/")) for h in (SPECIAL_HOST, TRAP_HOST, MIRROR_HOST, SLOW_HOST)]
        links += self.random_links(rng, index, "/", config.links)
        return html_response(f"{host} home", words(rng, 60), links, nav=self.navigation(index))

    def navigation(self, index: int) -> tuple[NavItem, ...]:
        """Regular host ``index``'s menu: home and the first
        ``nav_sections`` pages (the tree's top), labelled from the seed,
        identical on every page of the host."""
        sections = min(self.config.nav_sections, self.config.pages)
        if sections <= 0:
            return ()
        rng = self.rng(host_name(index), "#navigation")
        labels = rng.sample(WORDS * (1 + sections // len(WORDS)), sections)
        return (NavItem("/", "Home"),
                *(NavItem(f"/p/{n}.html", label.title()) for n, label in enumerate(labels)))

    def tree_page(self, index: int, number: int) -> Page:
        host, config = host_name(index), self.config
        rng = self.rng(host, f"/p/{number}.html")
        first = TREE_FANOUT * (number + 1)
        children = [n for n in range(first, first + TREE_FANOUT) if n < config.pages]
        links = [Link(rng.choice((f"{n}.html", f"/p/{n}.html", f"./{n}.html"))) for n in children]
        from testweb.heavy import heavy_page, link_count  # builds on this module

        wanted = link_count(rng) if config.weight == "real" else config.links
        links += self.random_links(rng, index, "/p/", max(wanted - len(children), 1), near=number)
        if config.weight == "real":
            nav = self.navigation(index)
            body = heavy_page(rng, f"{host} page {number}", links, nav)
            return Page(200, body=body, links=tuple(Link(item.href) for item in nav) + tuple(links))
        return html_response(f"{host} page {number}", words(rng, rng.randint(40, 90)), links,
                             nav=self.navigation(index))

    def random_links(self, rng: random.Random, index: int, directory: str, count: int,
                     search: bool = True, near: int | None = None) -> list[Link]:
        """``count`` random links in the spellings real sites use; from page
        ``near``, most same-host links go to its neighbours (:meth:`page_number`)."""
        links = []
        for _ in range(count):
            roll = rng.random()
            if roll < SAME_HOST_SHARE:
                href = self.same_host_href(rng, index, directory, self.page_number(rng, near))
            elif roll < SAME_HOST_SHARE + CROSS_HOST_SHARE:
                href = self.cross_host_href(rng)
            elif roll < SAME_HOST_SHARE + CROSS_HOST_SHARE + SEARCH_SHARE and search:
                href = search_href(rng)
            else:
                href = f"/p/{self.page_number(rng, near)}.html#section-{rng.randint(1, 3)}"
            links.append(Link(href))
        return links

    def page_number(self, rng: random.Random, near: int | None) -> int:
        """A page of the host: with probability :data:`LOCAL_SHARE` one within
        :data:`LOCAL_SPAN` of page ``near`` (real sites link the pages next
        to one: the previous and next chapter, the rest of a listing), else
        any page."""
        pages = self.config.pages
        if near is None or rng.random() >= LOCAL_SHARE:
            return rng.randrange(pages)
        offset = rng.randint(1, LOCAL_SPAN) * rng.choice((-1, 1))
        return min(max(near + offset, 0), pages - 1)

    def same_host_href(self, rng: random.Random, index: int, directory: str, number: int) -> str:
        choices = [f"/p/{number}.html", self.url(host_name(index), f"/p/{number}.html")]
        if directory == "/p/":
            choices += [f"{number}.html", f"./{number}.html", f"../p/{number}.html"]
        elif directory == "/":
            choices += [f"p/{number}.html", f"./p/{number}.html"]
        else:
            choices += [f"../p/{number}.html"]
        href = rng.choice(choices)
        return href + ("#top" if rng.random() < 0.2 else "")

    def cross_host_href(self, rng: random.Random) -> str:
        host = host_name(rng.randrange(self.config.hosts))
        path = "/" if rng.random() < 0.4 else f"/p/{rng.randrange(self.config.pages)}.html"
        spelling = rng.randrange(4)
        if spelling == 1:
            host = host.upper()
        netloc = host if self.port == 80 else f"{host}:{self.port}"
        if spelling == 2:
            return f"//{netloc}{path}"
        if spelling == 3 and path != "/":
            path += "#frag"
        return f"http://{netloc}{path}"


def search_href(rng: random.Random) -> str:
    """A search page link with repeated, shuffled arguments (canonical: a, a, b)."""
    a, b = rng.randrange(SEARCH_VALUES), rng.randrange(SEARCH_VALUES)
    args = [f"a={a}", f"a={a}", f"b={b}"]
    rng.shuffle(args)
    return "/s/search.html?" + "&".join(args)


def not_found(target: str) -> Page:
    return html_response("Not found", f"nothing at {target}", (), status=404)
