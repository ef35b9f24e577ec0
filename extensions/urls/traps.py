"""Trap signals read off a page's links: session ids, calendars, descents.

AOPIC starves a trap only slowly: a calendar page passes its cash to the
next month, so under a page budget a trap keeps buying fetches. These three
tests cut the commonest traps where they start, per page, before AOPIC
credits the links (:class:`TrapFilter` is an item pipeline just before
:class:`extensions.pipelines.links.LinkScheduler`, which credits and
schedules what is left in the item's ``links``):

* **Session ids** (any parameter name): a token-shaped value (16+ letters
  and digits, hex or random-looking) that one page puts, identically, in the
  same place (a query argument, a ``;name=`` path parameter, or a path
  segment after the same prefix) of most of its same-host links to at least
  ``URL_FILTER_SESSION_MIN_LINKS`` different URLs is a *suspected* session id
  (``urlfilter/session_suspected``). It is *proven* only when the server
  changed the value: the page's own URL holds another value in that place
  (the server answered a request under one session with links under a new
  one), or a second fetch of the same URL put another value there. A proven
  place is removed from the host's later links (query and path parameters)
  or set to the first value seen (a path segment, which cannot be removed
  without changing the page), so every session spells a page the same way
  (``urlfilter/session_params`` proven, ``urlfilter/session_stripped``
  rewrites). A suspicion is never a rewrite: a value that names content (a
  commit id repeated in a commit page's links) is the same on every fetch.
  Well-known session names (``jsessionid``, ``phpsessid``, ...) are stripped
  earlier, by ``LINKS_STRIP_PARAMS``.
* **Calendars**: a URL holding a date (``/2026/05/``, ``/2026-05-14``,
  ``?year=2026&month=5``) is a value of its template (the URL with the date
  taken out); each host and template gets at most ``URL_FILTER_MAX_DATES``
  distinct dates (``urlfilter/filtered/calendar``). A blog post's URL holds
  its slug as well, so every post is a template of its own and is not cut.
* **Ever deeper paths** (soft 404s answering any path with a relative link):
  a link that extends the path of the page it is on is one more step of a
  descent; more than ``URL_FILTER_MAX_DESCENT`` steps in a row are refused
  (``urlfilter/filtered/descent``). Unique segment names defeat
  ``URL_FILTER_MAX_SEGMENT_REPEATS``; this does not.

Memory is bounded: learned sessions, date templates and descent steps live
in LRU maps of ``URL_FILTER_TRAP_MEMORY`` entries each. State is per process
(with several processes each learns a host's session id from its first page).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from extensions.signals import urls_refused
from extensions.urls.split import netloc_path
from extensions import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["TrapFilter", "TrapSignals", "date_template", "is_token"]

_TOKEN = re.compile(r"[0-9A-Za-z_-]{16,128}")
_HEX = re.compile(r"[0-9a-fA-F]{16,}")
_DIGIT, _ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")
_PATH_DATE = re.compile(
    r"(?<![0-9])(1[89]\d\d|2[01]\d\d)([/-])(0[1-9]|1[0-2])(?:\2(0[1-9]|[12]\d|3[01]))?(?![0-9])")
_DATE_KEYS = ("year", "month", "day", "date", "yr", "mon", "week")
_NUMERIC_DATE = re.compile(r"\d{1,4}(?:-\d{1,2}){0,2}")
# found in every URL holding a date (a path date, or a digit after "="): most
# links have neither, and one search rules both out
_DATE_HINT = re.compile(r"(?<![0-9])(?:1[89]\d\d|2[01]\d\d)[/-](?:0[1-9]|1[0-2])|=\d")


def is_token(value: str) -> bool:
    """Whether ``value`` looks like a generated id (a session id): 16 or more
    of ``[0-9A-Za-z_-]``, hex digits or a mix of letters and digits."""
    if not _TOKEN.fullmatch(value):
        return False
    return bool(_HEX.fullmatch(value)) or bool(_DIGIT.search(value) and _ALPHA.search(value))


def date_template(url: str) -> tuple[str, str] | None:
    """(the URL with its date replaced by a placeholder, the date) for a URL
    holding a date in its path or in date-named query arguments; else None."""
    if _DATE_HINT.search(url) is None:
        return None
    base, _, query = url.partition("?")
    match = _PATH_DATE.search(base, base.find("/", base.find("//") + 2) if "//" in base else 0)
    template, found = base, ""
    if match:
        template = base[:match.start()] + "{date}" + base[match.end():]
        found = match.group(0)
    if query:
        kept = []
        for argument in query.split("&"):
            name, _, value = argument.partition("=")
            if _NUMERIC_DATE.fullmatch(value) and name.lower().rstrip("s") in _DATE_KEYS:
                kept.append(f"{name}={{}}")
                found += f"&{argument}"
            else:
                kept.append(argument)
        template += "?" + "&".join(kept)
    return (template, found) if found else None


class _Lru(OrderedDict):  # type: ignore[type-arg]
    """An OrderedDict that forgets its least recently set keys beyond a size."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)


class TrapSignals:
    """The three trap tests over one page's links; pure (no Scrapy).

    :meth:`filter` returns the links to keep (session ids rewritten) and
    counts what it did in :attr:`counts`.
    """

    def __init__(self, max_dates: int = 12, max_descent: int = 8, session_min_links: int = 3,
                 memory: int = 65536) -> None:
        self.max_dates = max_dates
        self.max_descent = max_descent
        self.session_min_links = session_min_links
        self.sessions: _Lru = _Lru(memory)  # host -> {proven place: canonical value or ""}
        self.suspects: _Lru = _Lru(memory)  # (host, place) suspected, not proven
        self.fetched: _Lru = _Lru(memory)  # page URL -> {suspected place: value in its links}
        self.dates: _Lru = _Lru(memory)  # (host, template) -> set of dates
        self.descents: _Lru = _Lru(memory)  # url -> descent steps that reached it
        self.counts: dict[str, int] = {}

    def _count(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount

    def filter(self, page_url: str, links: Iterable[str],
               refused: list[tuple[str, str]] | None = None) -> list[str]:
        """The links of the page at ``page_url`` that survive the trap tests;
        calendar refusals are appended to ``refused`` as ``(url,
        "trap/calendar")`` (not descents: another path may reach the URL
        in fewer steps)."""
        split = [(url, *netloc_path(url)) for url in links]  # each link split once
        page_host, page_path = netloc_path(page_url)
        if self.session_min_links:
            self._learn_sessions(page_host, page_url, [url for url, netloc, _ in split if netloc == page_host])
        kept = []
        steps = self.descents.get(page_url, 0)
        sessions = self.sessions
        for url, netloc, path in split:
            if sessions and sessions.get(netloc):
                url = self._rewrite(url, netloc)
                netloc, path = netloc_path(url)
            if self.max_dates and not self._date_allowed(url, netloc):
                self._count("filtered/calendar")
                if refused is not None:
                    refused.append((url, "trap/calendar"))
                continue
            if self.max_descent and netloc == page_host:
                if not self._descent_allowed(url, path, page_path, steps):
                    self._count("filtered/descent")
                    continue
            kept.append(url)
        return kept

    # -- session ids ------------------------------------------------------

    @staticmethod
    def _places(url: str) -> Iterable[tuple[tuple[str, str], str, str]]:
        """(place, token value, the URL without it) for each token in ``url``;
        a place is ("q", name), (";", name) or ("/", prefix)."""
        base, _, query = url.partition("?")
        for argument in query.split("&") if query else ():
            name, _, value = argument.partition("=")
            if is_token(value):
                yield ("q", name), value, base + "?" + query.replace(argument, "", 1)
        scheme_end = base.find("//") + 2
        path_start = base.find("/", scheme_end)
        if path_start < 0:
            return
        path = base[path_start:]
        if ";" in path:
            head, _, parameters = path.partition(";")
            for parameter in parameters.split(";"):
                name, _, value = parameter.partition("=")
                if is_token(value):
                    yield (";", name), value, head + "?" + query
        segments = path.split("/")
        for index, segment in enumerate(segments[1:-1], start=1):
            if is_token(segment):
                rest = "/".join(segments[:index] + ["*"] + segments[index + 1:])
                yield ("/", "/".join(segments[:index])), segment, rest + "?" + query

    def _learn_sessions(self, host: str, page_url: str, same_host: list[str]) -> None:
        """A token in one place of most same-host links, to several URLs, is
        a suspected session id of ``host``; proven (and from then on
        rewritten) when the server changed the value: the page's own URL,
        or an earlier fetch of it, had another value in that place."""
        if len(same_host) < self.session_min_links:
            return
        rests: dict[tuple[tuple[str, str], str], set[str]] = {}
        for url in same_host:
            if _TOKEN.search(url) is None:  # no token anywhere: no place holds one
                continue
            for place, value, rest in self._places(url):
                rests.setdefault((place, value), set()).add(rest)
        known = self.sessions.get(host) or {}
        observed: dict[tuple[str, str], str] = {}
        for (place, value), others in rests.items():
            if place in known or not (
                    len(others) >= self.session_min_links and 2 * len(others) >= len(set(same_host))):
                continue
            observed[place] = value
            requested = {p: v for p, v, _ in self._places(page_url)}.get(place)
            earlier = (self.fetched.get(page_url) or {}).get(place)
            if (requested is not None and requested != value) or (earlier is not None and earlier != value):
                known[place] = value if place[0] == "/" else ""
                self.sessions.put(host, known)
                self._count("session_params")
            elif (host, place) not in self.suspects:
                self.suspects.put((host, place), True)
                self._count("session_suspected")
        if observed:
            self.fetched.put(page_url, observed)

    def _rewrite(self, url: str, host: str) -> str:
        places = self.sessions[host]
        base, question, query = url.partition("?")
        changed = False
        if question:
            kept = [arg for arg in query.split("&") if ("q", arg.partition("=")[0]) not in places]
            changed = len(kept) != query.count("&") + 1
            query = "&".join(kept)
        if ";" in base:
            head, _, parameters = base.partition(";")
            kept = [p for p in parameters.split(";") if (";", p.partition("=")[0]) not in places]
            changed = changed or len(kept) != parameters.count(";") + 1
            base = ";".join([head, *kept])
        segments = base.split("/")
        for index in range(3, len(segments) - 1):  # after "http:", "", netloc
            canonical = places.get(("/", "/".join(["", *segments[3:index]])))
            if canonical and segments[index] != canonical and is_token(segments[index]):
                segments[index] = canonical
                changed = True
        if not changed:
            return url
        self._count("session_stripped")
        base = "/".join(segments)
        return f"{base}?{query}" if query else base

    # -- calendars and descents -------------------------------------------

    def _date_allowed(self, url: str, host: str) -> bool:
        found = date_template(url)
        if found is None:
            return True
        key = (host, found[0])
        dates = self.dates.get(key)
        if dates is None:
            dates = set()
            self.dates.put(key, dates)
        if found[1] in dates:
            return True
        if len(dates) >= self.max_dates:
            return False
        dates.add(found[1])
        return True

    def _descent_allowed(self, url: str, path: str, page_path: str, steps: int) -> bool:
        directory = page_path[:page_path.rfind("/") + 1]
        if not (path.startswith(directory) and path.count("/") > directory.count("/")):
            if url in self.descents:  # also reached without descending: the shortest run counts
                del self.descents[url]
            return True
        if steps + 1 > self.max_descent:
            return False
        known = self.descents.get(url)
        if known is None or steps + 1 < known:
            self.descents.put(url, steps + 1)
        return True


class TrapFilter:
    """Item pipeline: apply :class:`TrapSignals` to the item's ``links``
    (the links :class:`~extensions.pipelines.links.LinkScheduler` credits and
    schedules next); counts as ``urlfilter/<what>`` stats."""

    def __init__(self, signals: TrapSignals, stats: Any, send: Callable[..., Any] | None = None) -> None:
        self.signals = signals
        self.stats = stats
        self.send = send  # the crawler's send_catch_log: refusals go to the frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TrapFilter:
        settings = crawler.settings
        if not settings.getbool("URL_FILTER_TRAPS_ENABLED", defaults.URL_FILTER_TRAPS_ENABLED):
            raise NotConfigured("URL_FILTER_TRAPS_ENABLED is off")
        values = {}
        for name in ("URL_FILTER_MAX_DATES", "URL_FILTER_MAX_DESCENT",
                     "URL_FILTER_SESSION_MIN_LINKS", "URL_FILTER_TRAP_MEMORY"):
            value = settings.get(name)
            try:
                values[name] = int(value)
            except (TypeError, ValueError) as err:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}") from err
            if values[name] < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        signals = TrapSignals(values["URL_FILTER_MAX_DATES"], values["URL_FILTER_MAX_DESCENT"],
                              values["URL_FILTER_SESSION_MIN_LINKS"],
                              max(1, values["URL_FILTER_TRAP_MEMORY"]))
        return cls(signals, crawler.stats, crawler.signals.send_catch_log)

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        links, url = adapter.get("links"), adapter.get("url")
        if not links or not url:
            return item
        before = dict(self.signals.counts)
        refused: list[tuple[str, str]] = []
        adapter["links"] = self.signals.filter(url, links, refused)
        if refused and self.send is not None:
            self.send(urls_refused, refusals=refused)
        for key, value in self.signals.counts.items():
            if value != before.get(key, 0):
                self.stats.inc_value(f"urlfilter/{key}", value - before.get(key, 0))
        return item
