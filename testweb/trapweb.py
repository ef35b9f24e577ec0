"""A second synthetic web, built independently of :mod:`testweb.model`,
for measuring crawler traps under a page budget.

A pure function of ``(config, port, host, target)`` like the default web,
served by the same server (``python -m testweb serve --web traps``),
with its own truth: which fetched URLs are traps and which documents are the
non-trap pages a crawl should cover.

Hosts (``config.sites`` ordinary ones, four with traps):

* ``site00.example`` ...: ordinary sites of 20-120 pages in sections
  (``/docs/<slug>.html``, ``/blog/<year>/<slug>.html``, ``/products/item-<n>.html``,
  section indexes), cross-linked, with the duplicates and errors real sites
  have: ``/index.html`` (a copy of ``/``), redirects from ``/old/...``,
  broken links (404). ``site00.example/`` is the seed and links every site.
* ``events.example``: an event listing (``/events/?page=N``, finite) and
  event pages (non-trap), and an endless calendar (trap): month views
  ``/calendar/YYYY/MM/`` and ``/events?year=Y&month=M`` with previous/next
  month links forever, day views ``/calendar/YYYY/MM/DD/`` with
  previous/next day links; days with events link their events.
* ``shop.example``: session ids in the query (``?s=<hex>``), a new one for
  every page view (the id derives from the requested URL, so a page fetched
  under one session links every page under another). Its documents are its
  paths: the first fetch of a path is a page, later ones are traps.
* ``portal.example``: the same with the session in the path,
  ``/sess/<token>/<page>``, and ``forum.example`` as a matrix parameter,
  ``/<page>;ssid=<token>``.
* ``wiki.example``: real pages ``/wiki/<Title>`` and a soft-404 catch-all
  under ``/archive/`` (trap): any path answers 200 with a relative link to
  a deeper directory with a unique name.

Session tokens and sort orders use parameter names that are not in
``LINKS_STRIP_PARAMS``.
"""

from __future__ import annotations

import random
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

from testweb.model import Link, Page, canonical_url, html_response, not_found, stable_int, words

EVENTS_HOST = "events.example"
SHOP_HOST = "shop.example"
PORTAL_HOST = "portal.example"
FORUM_HOST = "forum.example"
WIKI_HOST = "wiki.example"
SESSION_HOSTS = (SHOP_HOST, PORTAL_HOST, FORUM_HOST)
TRAP_HOSTS = (EVENTS_HOST, *SESSION_HOSTS, WIKI_HOST)
TODAY = date(2026, 5, 14)  # the calendar's "now": fixed, so bytes never change
EVENT_DAYS = 120  # events fall on days within this many days of TODAY
SECTIONS = ("docs", "blog", "products", "about")


@dataclass(frozen=True)
class TrapWebConfig:
    """What the trap web looks like; equal configs give equal bytes."""

    sites: int = 30
    seed: int = 1
    events: int = 60
    shop_pages: int = 40
    wiki_pages: int = 60

    def cli_args(self) -> list[str]:
        return ["--web", "traps", "--hosts", str(self.sites), "--seed", str(self.seed)]


def site_name(index: int) -> str:
    return f"site{index:02d}.example"


def token(*parts: object) -> str:
    """A session id: 24 hex digits derived from ``parts``."""
    return f"{stable_int('session', *parts):016x}{stable_int('tail', *parts) & 0xffffffff:08x}"


@dataclass
class TrapWeb:
    """All hosts of one trap web, bound to the port links spell out."""

    config: TrapWebConfig
    port: int
    hosts: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.hosts = [site_name(i) for i in range(self.config.sites)] + list(TRAP_HOSTS)
        self._known = frozenset(self.hosts)
        self.page = lru_cache(maxsize=8192)(self._page)  # type: ignore[method-assign]
        self._sites = {site_name(i): self._site_paths(i) for i in range(self.config.sites)}

    # -- the model's interface (as SiteModel's) ---------------------------

    def origin(self, host: str) -> str:
        return f"http://{host}" if self.port == 80 else f"http://{host}:{self.port}"

    def url(self, host: str, path: str = "/") -> str:
        return self.origin(host) + path

    @property
    def seeds(self) -> list[str]:
        return [self.url(site_name(0), "/")]

    def knows(self, host: str) -> bool:
        return host in self._known

    def rng(self, *parts: object) -> random.Random:
        return random.Random(stable_int(self.config.seed, *parts))

    def _page(self, host: str, target: str) -> Page:
        if host not in self._known:
            return not_found(target)
        if target == "/robots.txt":
            return self.robots(host)
        if host in self._sites:
            return self.site_page(host, target) or not_found(target)
        if host == EVENTS_HOST:
            return self.events_page(target) or not_found(target)
        if host in SESSION_HOSTS:
            return self.session_page(host, target) or not_found(target)
        return self.wiki_page(target) or not_found(target)

    def robots(self, host: str) -> Page:
        if host in self._sites and int(host[4:6]) % 3 == 1:
            return Page(200, "text/plain", b"User-agent: *\nDisallow: /private/\n")
        return Page(404, "text/plain", b"no robots.txt\n")

    # -- ordinary sites ---------------------------------------------------

    def _site_paths(self, index: int) -> list[str]:
        rng = self.rng("site", index)
        count = rng.randint(20, 120)
        paths = ["/"] + [f"/{section}/" for section in SECTIONS]
        for number in range(count - len(paths)):
            section = SECTIONS[number % len(SECTIONS)]
            if section == "blog":
                paths.append(f"/blog/{2015 + number % 11}/{words(rng, 1)}-{number}.html")
            elif section == "products":
                paths.append(f"/products/item-{number}.html")
            else:
                paths.append(f"/{section}/{words(rng, 1)}-{number}.html")
        return paths

    def site_page(self, host: str, target: str) -> Page | None:
        paths = self._sites[host]
        if target == "/index.html":  # an exact copy of the root
            target = "/"
        if target.startswith("/old/"):
            moved = target[4:]
            return Page(301, location=moved) if moved in paths else None
        if target not in paths:
            return None
        index = paths.index(target)
        rng = self.rng(host, target)
        links = [Link(paths[child]) for child in range(3 * index + 1, 3 * index + 4) if child < len(paths)]
        if target.endswith("/") and target != "/":  # a section index lists its pages
            links += [Link(path) for path in paths if path.startswith(target) and path != target]
        links += [Link(rng.choice(paths)) for _ in range(3)]
        links += [Link(f"/old{rng.choice(paths)}"), Link("/index.html"), Link("/private/x.html")]
        if rng.random() < 0.3:
            links.append(Link(f"/{words(rng, 1)}-missing.html"))  # broken: 404
        links += self.cross_links(rng, host, target)
        return html_response(f"{host} {target}", words(rng, rng.randint(50, 120)), links)

    def cross_links(self, rng: random.Random, host: str, target: str) -> list[Link]:
        sites = self.config.sites
        links = []
        if host == site_name(0) and target == "/":
            links += [Link(self.url(site_name(i))) for i in range(1, sites)]
            links += [Link(self.url(trap_host)) for trap_host in TRAP_HOSTS]
        for _ in range(2):
            other = site_name(rng.randrange(sites))
            links.append(Link(self.url(other, rng.choice(self._sites[other]))))
        if rng.random() < 0.1:
            links.append(Link(self.url(rng.choice(TRAP_HOSTS))))
        return links

    # -- events.example: listing, events, endless calendar -----------------

    def event_day(self, number: int) -> date:
        return TODAY + timedelta(days=self.rng("event", number).randint(-EVENT_DAYS, EVENT_DAYS))

    def events_on(self, day: date) -> list[int]:
        return [n for n in range(self.config.events) if self.event_day(n) == day]

    def events_page(self, target: str) -> Page | None:
        per_page = 10
        pages = (self.config.events + per_page - 1) // per_page
        if target == "/" or target == "/events/":
            links = [Link("/events/?page=1"), Link(f"/calendar/{TODAY:%Y/%m}/"),
                     Link(f"/events?month={TODAY.month}&year={TODAY.year}")]
            return html_response("Events", words(self.rng("events"), 40), links)
        match = re.fullmatch(r"/events/\?page=(\d+)", target)
        if match and 1 <= int(match.group(1)) <= pages:
            number = int(match.group(1))
            links = [Link(f"/events/e{n}.html") for n in range((number - 1) * per_page,
                                                               min(number * per_page, self.config.events))]
            links += [Link(f"/events/?page={n}") for n in range(1, pages + 1) if n != number]
            return html_response(f"Events page {number}", words(self.rng("list", number), 30), links)
        match = re.fullmatch(r"/events/e(\d+)\.html", target)
        if match and int(match.group(1)) < self.config.events:
            number = int(match.group(1))
            day = self.event_day(number)
            links = [Link("/events/"), Link(f"/calendar/{day:%Y/%m/%d}/")]
            return html_response(f"Event {number} on {day}", words(self.rng("e", number), 80), links)
        return self.calendar_page(target)

    def calendar_page(self, target: str) -> Page | None:
        match = re.fullmatch(r"/calendar/(\d{4})/(\d{2})/(?:(\d{2})/)?", target)
        query = re.fullmatch(r"/events\?month=(\d+)&year=(\d+)", target)
        try:
            if match and match.group(3):
                return self.day_view(date(int(match.group(1)), int(match.group(2)), int(match.group(3))))
            if match:
                return self.month_view(int(match.group(1)), int(match.group(2)), query_form=False)
            if query:
                return self.month_view(int(query.group(2)), int(query.group(1)), query_form=True)
        except ValueError:  # no such date
            return None
        return None

    def month_view(self, year: int, month: int, query_form: bool) -> Page | None:
        if not 1 <= month <= 12 or not 1 <= year <= 9999:
            return None
        prev_month = (year, month - 1) if month > 1 else (year - 1, 12)
        next_month = (year, month + 1) if month < 12 else (year + 1, 1)
        if query_form:
            links = [Link(f"/events?year={y}&month={m}") for y, m in (prev_month, next_month)]
        else:
            links = [Link(f"/calendar/{y:04d}/{m:02d}/") for y, m in (prev_month, next_month)]
        day = date(year, month, 1)
        while day.month == month:
            if self.events_on(day):
                links.append(Link(f"/calendar/{day:%Y/%m/%d}/"))
            day += timedelta(days=1)
        links.append(Link("/events/"))
        return html_response(f"Calendar {year}-{month:02d}", f"Events in {year}-{month:02d}.", links)

    def day_view(self, day: date) -> Page:
        links = [Link(f"/calendar/{other:%Y/%m/%d}/") for other in (day - timedelta(days=1),
                                                                    day + timedelta(days=1))]
        links += [Link(f"/calendar/{day:%Y/%m}/")]
        links += [Link(f"/events/e{n}.html") for n in self.events_on(day)]
        return html_response(f"Calendar {day}", f"Events on {day}.", links)

    # -- session hosts ----------------------------------------------------

    def session_paths(self, host: str) -> list[str]:
        return ["/"] + [f"/c/{c}/" for c in range(5)] + [f"/p/{n}.html" for n in range(self.config.shop_pages)]

    def split_session(self, host: str, target: str) -> tuple[str, str | None]:
        """(the document's path, the session id in ``target`` or None)."""
        if host == SHOP_HOST:
            match = re.fullmatch(r"([^?]*)\?s=([0-9a-f]+)", target)
            return (match.group(1), match.group(2)) if match else (target, None)
        if host == PORTAL_HOST:
            match = re.fullmatch(r"/sess/([0-9a-f]+)(/.*)", target)
            return (match.group(2), match.group(1)) if match else (target, None)
        match = re.fullmatch(r"(.*);ssid=([0-9a-f]+)", target)
        return (match.group(1), match.group(2)) if match else (target, None)

    def with_session(self, host: str, path: str, session: str) -> str:
        if host == SHOP_HOST:
            return f"{path}?s={session}"
        if host == PORTAL_HOST:
            return f"/sess/{session}{path}"
        return f"{path};ssid={session}"

    def session_page(self, host: str, target: str) -> Page | None:
        path, _ = self.split_session(host, target)
        paths = self.session_paths(host)
        if path not in paths:
            return None
        session = token(host, target)  # a new session for every page view
        rng = self.rng(host, path)
        if path == "/":
            children = [p for p in paths if p.startswith("/c/")]
        elif path.startswith("/c/"):
            category = int(path[3:-1])
            children = [p for n, p in enumerate(paths) if p.startswith("/p/") and n % 5 == category]
        else:
            children = [rng.choice(paths) for _ in range(3)]
        children = ["/"] + children + [f"/c/{rng.randrange(5)}/"]
        links = [Link(self.with_session(host, child, session)) for child in children]
        # the session shows on the page, so pages under two sessions differ
        return html_response(f"{host} {path}", words(rng, 60) + f" Your session: {session}.", links)

    # -- wiki.example: real pages and a soft-404 archive --------------------

    def wiki_page(self, target: str) -> Page | None:
        titles = [f"Topic_{n}" for n in range(self.config.wiki_pages)]
        if target == "/":
            return html_response("Wiki", "A wiki.", [Link("/wiki/Topic_0"), Link("/archive/")])
        match = re.fullmatch(r"/wiki/Topic_(\d+)", target)
        if match and int(match.group(1)) < len(titles):
            number = int(match.group(1))
            rng = self.rng("wiki", number)
            links = [Link(f"/wiki/{titles[c]}") for c in (2 * number + 1, 2 * number + 2) if c < len(titles)]
            links += [Link(f"/wiki/{rng.choice(titles)}"), Link("/archive/")]
            return html_response(f"Wiki {titles[number]}", words(rng, 70), links)
        if target.startswith("/archive/") and "?" not in target:
            # soft 404: any path "exists", and links two deeper directories
            rng = self.rng("archive", target)
            deeper = f"{words(rng, 1)}{stable_int(target) % 10000:04d}/"
            links = [Link(deeper), Link("/archive/"), Link("/wiki/Topic_0")]
            return html_response("Archive", f"Archive listing {target}.", links)
        return None

    # -- truth ------------------------------------------------------------

    def document(self, url: str) -> str:
        """The document a canonical URL shows: the URL itself, or for a session
        host the URL without its session id."""
        parts = urlsplit(url)
        if parts.hostname not in SESSION_HOSTS:
            return url
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        path, _ = self.split_session(parts.hostname, target)
        return f"{parts.scheme}://{parts.netloc}{path}"

    def is_trap(self, url: str) -> bool:
        """Whether a canonical URL is a trap page (calendar views, the archive's
        soft 404s below ``/archive/``); session copies are judged by :meth:`document`."""
        parts = urlsplit(url)
        if parts.hostname == EVENTS_HOST:
            return parts.path.startswith("/calendar/") or (parts.path == "/events" and bool(parts.query))
        return parts.hostname == WIKI_HOST and parts.path.startswith("/archive/") and parts.path != "/archive/"

    def non_trap_pages(self) -> dict[str, bool]:
        """Every non-trap document reachable from the seeds (canonical URL ->
        whether it is a duplicate of another one): a breadth-first search over
        links, redirects followed, robots.txt ``/private/`` excluded."""
        found: dict[str, bool] = {}
        queue = deque(canonical_url(seed) for seed in self.seeds)
        seen = {self.document(url) for url in queue}
        while queue:
            url = queue.popleft()
            parts = urlsplit(url)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if self.is_trap(url) or target.startswith("/private/"):
                continue
            page = self.page(parts.hostname, target)
            hrefs = [page.location] if page.location else [link.href for link in page.links]
            if page.status == 200:
                document = self.document(url)
                found.setdefault(document, target == "/index.html")
            for href in hrefs:
                child = canonical_url(urljoin(url, href))
                if self.document(child) in seen:
                    continue
                seen.add(self.document(child))
                queue.append(child)
        return found
