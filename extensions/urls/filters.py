"""Mercator's URL filter: built-in tests cheapest first, then an optional
``URL_FILTER_CLASS`` (``allows(url) -> bool``); refusals ``urlfilter/filtered/<reason>``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.utils.misc import build_from_crawler, load_object

from extensions import defaults
from extensions.defaults import number_setting
from extensions.urls.split import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["UrlFilter", "UserUrlFilter"]

class UserUrlFilter(Protocol):
    """What ``URL_FILTER_CLASS`` must provide."""

    def allows(self, url: str) -> bool: ...


class UrlFilter:
    """Decides whether a canonical URL at a given link depth may be crawled."""

    def __init__(
        self,
        schemes: Iterable[str],
        deny_patterns: Iterable[str],
        max_length: int,
        max_depth: int,
        user_filter: UserUrlFilter | None = None,
        max_segment_repeats: int = 0,
        max_query_params: int = 0,
    ) -> None:
        self.schemes: frozenset[str] = frozenset(s.lower() for s in schemes)
        patterns = [p for p in deny_patterns if p]
        self.deny: re.Pattern[str] | None = (
            re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
        )
        self.max_length = max_length
        self.max_depth = max_depth
        self.user_filter = user_filter
        self.max_segment_repeats = max_segment_repeats
        self.max_query_params = max_query_params
        self.allowed_domains: frozenset[str] = frozenset()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlFilter:
        settings = crawler.settings
        schemes = settings.getlist("URL_FILTER_SCHEMES", defaults.URL_FILTER_SCHEMES)
        deny = settings.getlist("URL_FILTER_DENY", defaults.URL_FILTER_DENY)
        for pattern in deny:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(
                    f"URL_FILTER_DENY: invalid regular expression {pattern!r}: {err}"
                ) from err
        max_length = number_setting(settings, "URL_FILTER_MAX_LENGTH", 0, int)
        max_depth = number_setting(settings, "URL_FILTER_MAX_DEPTH", 0, int) or \
            number_setting(settings, "DEPTH_LIMIT", 0, int)
        user_filter = _build_user_filter(crawler, settings.get("URL_FILTER_CLASS"))
        return cls(schemes, deny, max_length, max_depth, user_filter,
                   number_setting(settings, "URL_FILTER_MAX_SEGMENT_REPEATS", 0, int),
                   number_setting(settings, "URL_FILTER_MAX_QUERY_PARAMS", 0, int))

    def set_allowed_domains(self, domains: Iterable[str]) -> None:
        """Restrict to these domains and their subdomains; empty: unrestricted."""
        self.allowed_domains = frozenset(
            d.strip().lower().strip(".") for d in domains if d and d.strip()
        )

    def reason(self, url: str, depth: int) -> str | None:
        """Why ``url`` found at link depth ``depth`` is refused; None if accepted."""
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in self.schemes:
            return "scheme"
        if self.max_length and len(url) > self.max_length:
            return "length"
        if self.max_depth and depth > self.max_depth:
            return "depth"
        if self.allowed_domains and not self._domain_allowed(host_of(url)):
            return "domain"
        if self.max_segment_repeats and self._repeats(rest) > self.max_segment_repeats:
            return "repeats"
        if self.max_query_params and rest.count("&", rest.find("?")) + 1 > self.max_query_params \
                and "?" in rest:
            return "query"
        if self.deny is not None and self.deny.search(url):
            return "deny"
        if self.user_filter is not None and not self.user_filter.allows(url):
            return "user"
        return None

    def check(self, url: str, depth: int, stats: Any = None,
              refused: list[tuple[str, str]] | None = None) -> bool:
        """True if ``url`` may be crawled; a refusal (but for depth) is appended to ``refused``."""
        why = self.reason(url, depth)
        if why is None:
            return True
        if stats is not None:
            stats.inc_value(f"urlfilter/filtered/{why}")
        if refused is not None and why != "depth":
            refused.append((url, f"filter/{why}"))
        return False

    @staticmethod
    def _repeats(after_scheme: str) -> int:
        """How often the most repeated path segment occurs."""
        path = after_scheme.partition("?")[0]
        slash = path.find("/")
        if slash < 0 or path.count("/", slash) < 3:
            return 1
        counts: dict[str, int] = {}
        for segment in path[slash + 1:].split("/"):
            if segment:
                counts[segment] = counts.get(segment, 0) + 1
        return max(counts.values(), default=0)

    def _domain_allowed(self, host: str) -> bool:
        """Whether ``host`` is an allowed domain or below one (an IPv6 literal has no dots: never)."""
        while host not in self.allowed_domains:
            dot = host.find(".")
            if dot < 0:
                return False
            host = host[dot + 1:]
        return True


def _build_user_filter(crawler: Crawler, path: Any) -> UserUrlFilter | None:
    """The ``URL_FILTER_CLASS`` instance, or None; a bad path fails at start."""
    if not path:
        return None
    try:
        user_filter = build_from_crawler(load_object(path), crawler)
    except (ImportError, NameError, ValueError, AttributeError, TypeError) as err:
        raise ValueError(f"URL_FILTER_CLASS: cannot build {path!r}: {err}") from err
    if not callable(getattr(user_filter, "allows", None)):
        raise ValueError(f"URL_FILTER_CLASS: {path!r} has no allows(url) method")
    return user_filter
