"""What one host's robots.txt says, by RFC 9309 (the Robots Exclusion Protocol).

Pure functions and a small record, no I/O: the middleware
(:mod:`extensions.robots.middleware`) fetches, this module decides. RFC 9309
section 2.3.1 gives the status rules we follow:

* 2xx: parse the body (after the redirects the downloader followed);
* 4xx ("unavailable"): no restrictions;
* 5xx or a network error ("unreachable"): everything disallowed for now,
  retried later with back-off; after a long unreachability (30 days by
  default) the crawler may treat it as unavailable, and we do;
* more than five redirects: unavailable, so no restrictions.

The body is cut at 500 KiB (section 2.5: crawlers MUST parse at least that
much, we parse no more), a UTF-8 byte order mark is dropped, and a body that
is not text (by its Content-Type, or NUL bytes when it has none) counts as an
empty file. Groups are matched by the crawler's product token (section
2.2.1), which Protego compares case-insensitively at token boundaries.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from protego import Protego

MAX_BODY = 500 * 1024  # RFC 9309 section 2.5: parse at least 500 kibibytes
BOM = b"\xef\xbb\xbf"
TEXT_TYPES = ("text/", "application/octet-stream")  # octet-stream: a bare server default


class Kind(enum.Enum):
    """The three outcomes of a robots.txt fetch."""

    RULES = "rules"  # 2xx: the parsed file decides
    UNAVAILABLE = "unavailable"  # 4xx, too many redirects: no restrictions
    UNREACHABLE = "unreachable"  # 5xx, network error: everything disallowed for now


def product_token(robots_user_agent: str | None, user_agent: str | None) -> str:
    """The token robots.txt groups are matched against: ``ROBOTSTXT_USER_AGENT``
    if set, else the first product of ``USER_AGENT`` (``webcrawler/0.1 (+...)``
    -> ``webcrawler``)."""
    for candidate in (robots_user_agent, user_agent):
        if candidate and candidate.strip():
            token = candidate.strip().split()[0].split("/", 1)[0]
            if token:
                return token.lower()
    return "*"


def is_text(content_type: str | None, body: bytes) -> bool:
    """Whether a robots.txt body is text we should parse."""
    if content_type:
        mime = content_type.split(";", 1)[0].strip().lower()
        return not mime or mime.startswith(TEXT_TYPES)
    return b"\x00" not in body[:1024]


def decode_body(body: bytes, content_type: str | None = None, max_size: int = MAX_BODY) -> str:
    """The text to parse: at most ``max_size`` bytes, BOM dropped, non-text empty.

    A cut in the middle of a line drops that partial line, so a rule is never
    read half-way (``Disallow: /p`` from ``Disallow: /private/``)."""
    if not is_text(content_type, body):
        return ""
    if body.startswith(BOM):
        body = body[len(BOM):]
    if len(body) > max_size:
        body = body[:max_size]
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: cut + 1] if cut >= 0 else b""
    return body.decode("utf-8", errors="replace")


def kind_of_status(status: int) -> Kind:
    """RFC 9309 2.3.1.2-2.3.1.4 (3xx left over after the redirects: unavailable)."""
    if 200 <= status < 300:
        return Kind.RULES
    if status >= 500:
        return Kind.UNREACHABLE
    return Kind.UNAVAILABLE


@dataclass
class RobotsRules:
    """One origin's robots.txt verdicts and how long they hold.

    ``expires`` is a clock time (the middleware's clock): the TTL for a
    parsed or unavailable file, the next retry for an unreachable one.
    ``unreachable_since`` survives retries, so the long-unreachability rule
    can fire."""

    kind: Kind
    token: str
    expires: float
    parser: Protego | None = None
    unreachable_since: float | None = None
    failures: int = 0
    status: int | None = None
    sitemaps: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, token: str, expires: float, status: int | None = 200) -> RobotsRules:
        parser = Protego.parse(text)
        return cls(Kind.RULES, token, expires, parser, status=status,
                   sitemaps=list(parser.sitemaps))

    def allowed(self, url: str) -> bool:
        """May ``url`` be fetched? (robots.txt itself always may.)"""
        if self.kind is Kind.UNREACHABLE:
            return False
        if self.kind is Kind.UNAVAILABLE or self.parser is None:
            return True
        return self.parser.can_fetch(url, self.token)

    def crawl_delay(self) -> float | None:
        """The ``Crawl-delay`` of the group that applies to us, if any."""
        if self.parser is None:
            return None
        try:
            delay = self.parser.crawl_delay(self.token)
        except (TypeError, ValueError):  # a malformed value is no delay
            return None
        return float(delay) if delay is not None and delay > 0 else None
