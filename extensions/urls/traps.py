"""Trap signals read off a page's links, cut per page by :class:`TrapFilter`;
state in per-process LRUs of ``URL_FILTER_TRAP_MEMORY`` entries.

* Session ids: a token in the same place of most same-host links, proven when
  the server changed it, is stripped or pinned in the host's later links.
* Calendars: at most ``URL_FILTER_MAX_DATES`` dates per host and URL template.
* Descents: more than ``URL_FILTER_MAX_DESCENT`` links in a row below their
  page's directory are refused."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from extensions import defaults
from extensions.defaults import number_setting
from extensions.signals import urls_refused
from extensions.urls.recent import LruCache
from extensions.urls.split import netloc_path

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
# in every URL holding a date (a path date, or a digit after "="): one search rules most links out
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


class TrapSignals:
    """The three trap tests over one page's links; pure."""

    def __init__(self, max_dates: int = 12, max_descent: int = 8, session_min_links: int = 3,
                 memory: int = 65536) -> None:
        self.max_dates = max_dates
        self.max_descent = max_descent
        self.session_min_links = session_min_links
        self.sessions: LruCache = LruCache(memory)  # host -> {proven place: canonical value or ""}
        self.suspects: LruCache = LruCache(memory)  # (host, place) suspected, not proven
        self.fetched: LruCache = LruCache(memory)  # page URL -> {suspected place: value in its links}
        self.dates: LruCache = LruCache(memory)  # (host, template) -> set of dates
        self.descents: LruCache = LruCache(memory)  # url -> descent steps that reached it
        self.counts: dict[str, int] = {}

    def _count(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount

    def filter(self, page_url: str, links: Iterable[str],
               refused: list[tuple[str, str]] | None = None) -> list[str]:
        """The page's links that survive the trap tests; calendar refusals appended to ``refused``."""
        split = [(url, *netloc_path(url)) for url in links]  # each link split once
        page_host, page_path = netloc_path(page_url)
        if self.session_min_links:
            self._learn_sessions(page_host, page_url, [url for url, netloc, _ in split if netloc == page_host])
        kept = []
        steps = self.descents.get(page_url, 0)
        directory = page_path[:page_path.rfind("/") + 1]  # the page's directory, for the descent test
        slashes = directory.count("/")
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
                if not self._descent_allowed(url, path, directory, slashes, steps):
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
        """Suspect or prove ``host``'s session-id places (module docstring)."""
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
                self.sessions[host] = known
                self._count("session_params")
            elif (host, place) not in self.suspects:
                self.suspects[(host, place)] = True
                self._count("session_suspected")
        if observed:
            self.fetched[page_url] = observed

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
            self.dates[key] = dates
        if found[1] in dates:
            return True
        if len(dates) >= self.max_dates:
            return False
        dates.add(found[1])
        return True

    def _descent_allowed(self, url: str, path: str, directory: str, slashes: int, steps: int) -> bool:
        """``directory``: the linking page's, with ``slashes`` slashes."""
        if not (path.startswith(directory) and path.count("/") > slashes):
            if url in self.descents:  # also reached without descending: the shortest run counts
                del self.descents[url]
            return True
        if steps + 1 > self.max_descent:
            return False
        known = self.descents.get(url)
        if known is None or steps + 1 < known:
            self.descents[url] = steps + 1
        return True


class TrapFilter:
    """Item pipeline: :class:`TrapSignals` on the item's ``links``; counts as ``urlfilter/<what>``."""

    def __init__(self, signals: TrapSignals, stats: Any, send: Callable[..., Any] | None = None) -> None:
        self.signals = signals
        self.stats = stats
        self.send = send  # the crawler's send_catch_log: refusals go to the frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TrapFilter:
        settings = crawler.settings
        if not settings.getbool("URL_FILTER_TRAPS_ENABLED", defaults.URL_FILTER_TRAPS_ENABLED):
            raise NotConfigured("URL_FILTER_TRAPS_ENABLED is off")
        dates, descent, session_links, memory = (number_setting(settings, name, 0, int) for name in (
            "URL_FILTER_MAX_DATES", "URL_FILTER_MAX_DESCENT", "URL_FILTER_SESSION_MIN_LINKS",
            "URL_FILTER_TRAP_MEMORY"))
        signals = TrapSignals(dates, descent, session_links, max(1, memory))
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
