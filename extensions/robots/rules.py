"""What one host's robots.txt says, by RFC 9309 (pure: the middleware fetches): 2xx its
rules, 4xx none, 5xx or a network error everything disallowed for now. A URL is fetched
only if both Protego's reading (of :func:`prepare`'s rewrite) and Google's allow it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote

from protego import Protego

MAX_BODY = 500 * 1024  # RFC 9309 section 2.5: parse at least 500 kibibytes
BOM = b"\xef\xbb\xbf"
AGENT, RULE, SITE, OTHER = "agent", "rule", "site", "other"
#: Field names as Protego reads them (misspellings included) and what they
#: are to grouping; any other record belongs to the group it is in.
KINDS = {
    **dict.fromkeys(("user-agent", "useragent", "user agent"), AGENT),
    **dict.fromkeys(("allow", "disallow", "dissallow", "dissalow", "disalow", "diasllow",
                     "disallaw"), RULE),
    **dict.fromkeys(("sitemap", "sitemaps", "site-map", "host"), SITE),
}
#: Google's parser keeps this many bytes of a line (2083 x 8, less its terminator)
GOOGLE_MAX_LINE = 2083 * 8 - 1
TEXT_TYPES = ("text/", "application/octet-stream")  # octet-stream: a bare server default
_ESCAPE_HEX = re.compile(r"%[0-9a-fA-F]{2}")
_SLASH = re.compile("%2[fF]")
#: what a URL holds unescaped (RFC 3986 reserved and unreserved), with "%", "*" and "$"
_URL_CHARACTERS = "!#$&'()*+,/:;=?@[]~%-._"
_SENDABLE = re.compile(r"[A-Za-z0-9!#$&'()*+,/:;=?@\[\]~%._-]*")


class Kind(enum.Enum):
    """The three outcomes of a robots.txt fetch."""

    RULES = "rules"  # 2xx: the parsed file decides
    UNAVAILABLE = "unavailable"  # 4xx, too many redirects: no restrictions
    UNREACHABLE = "unreachable"  # 5xx, network error: everything disallowed for now


def product_token(robots_user_agent: str | None, user_agent: str | None) -> str:
    """The token robots.txt groups are matched against: ``ROBOTSTXT_USER_AGENT``,
    else the first product of ``USER_AGENT``, lower-case."""
    for candidate in (robots_user_agent, user_agent):
        if candidate and candidate.strip():
            token = candidate.strip().split()[0].split("/", 1)[0]
            if token:
                return token.lower()
    return "*"


@lru_cache(maxsize=1024)  # asked per decision with our token: a dict hit
def agent_key(value: str) -> str:
    """The product token a ``user-agent`` line names, as groups are compared
    (``FOO BAR`` -> ``foo``, ``Foo/1.0`` -> ``foo``, ``*`` stays)."""
    value = value.strip()
    if value == "*" or (value.startswith("*") and value[1].isspace()):
        return "*"  # Google reads "* anything" as the global group too
    words = value.split(None, 1)
    return words[0].split("/", 1)[0].replace("*", "").lower() if words else ""


def _record(line: str) -> tuple[str, str, str] | None:
    """(kind, field, value) of a line as Protego reads it; None for a blank line."""
    content = line.split("#", 1)[0].strip()
    if not content:
        return None
    name, colon, value = content.partition(":")
    name = name.strip().lower()
    if colon:
        if name in KINDS:
            return KINDS[name], name, value.strip()
        if not value or value[0].isspace():
            return OTHER, name, ""
    words = content.split()  # Protego's "User-agent foo", "Disallow /x"
    for count in (1, 2):
        candidate = " ".join(words[:count]).lower()
        if candidate in KINDS:
            return KINDS[candidate], candidate, " ".join(words[count:])
    return OTHER, name, ""


def prepare(text: str, token: str) -> str:
    """``text`` rewritten so that Protego reads it as RFC 9309 says, for ``token``."""
    records = [(line, record) for line in text.splitlines()
               if (record := _record(line)) is not None]
    key = agent_key(token)
    # RFC 9309 2.2.1: our groups if any names us, else "*"; only those are kept,
    # since Protego ranks groups by name length (a one-letter token ties "*").
    if not any(kind == AGENT and agent_key(value) == key for _, (kind, _, value) in records):
        key = "*"
    out: list[str] = []
    agents: set[str] = set()  # the keys of the current group's user-agent lines
    held: list[str] = []  # group records met among those lines
    in_agents = relevant = False
    for line, (kind, name, value) in records:
        if kind == AGENT:
            if not in_agents:
                agents.clear()
                in_agents = True
            agents.add(agent_key(value))
        elif kind == SITE:
            out.append(line)
        elif kind == OTHER:
            if in_agents:
                held.append(line)
            elif relevant:
                out.append(line)
        else:  # a rule: the user-agent lines are over
            if in_agents:
                in_agents = False
                relevant = _close_agents(out, agents, key, held)
            if relevant:
                out.append(line)
                if name != "allow":
                    out.extend(f"{name}: {twin}" for twin in slash_twins(value))
    if in_agents:
        _close_agents(out, agents, key, held)
    return "\n".join(out) + "\n"


def slash_twins(pattern: str) -> list[str]:
    """A rule's other spellings of its query's ``/`` (``/`` and ``%2F``), equal
    under RFC 9309 (2.2.2, figure 4) but kept apart by Protego."""
    path, question, query = pattern.partition("?")
    if not question or ("/" not in query and "%2" not in query):
        return []
    spellings = {f"{path}?{query.replace('/', '%2F')}", f"{path}?{_SLASH.sub('/', query)}"}
    return sorted(spellings - {pattern})


def plain_escape(pattern: str) -> str:
    """A rule's path as Google's parser compares it (non-ASCII and unsendable
    octets percent-encoded, escapes upper case), each ``%`` written ``%25``."""
    escaped = _ESCAPE_HEX.sub(lambda match: match.group().upper(), pattern)
    if not _SENDABLE.fullmatch(escaped):
        escaped = quote(escaped, safe=_URL_CHARACTERS)
    return escaped.replace("%", "%25")


def plain_rules(prepared: str) -> str | None:
    """The plain (Google) reading of ``prepared``; None when it compares the same."""
    out, differs = [], False
    for line in prepared.splitlines():
        if len(line) > GOOGLE_MAX_LINE // 4 and len(encoded := line.encode("utf-8")) > GOOGLE_MAX_LINE:
            line, differs = encoded[:GOOGLE_MAX_LINE].decode("utf-8", errors="ignore"), True
        record = _record(line)
        if record is not None and record[0] == RULE:
            value = plain_escape(record[2])
            differs = differs or value != record[2]
            line = f"{record[1]}: {value}"
        out.append(line)
    return "\n".join(out) + "\n" if differs else None


def _close_agents(out: list[str], agents: set[str], key: str, held: list[str]) -> bool:
    """Write the group's records if the group concerns us; whether it does."""
    mine = key in agents
    if mine:
        out.append(f"User-agent: {key}")
        out.extend(held)
    held.clear()
    return mine


def is_text(content_type: str | None, body: bytes) -> bool:
    """Whether a robots.txt body is text we should parse."""
    if content_type:
        mime = content_type.split(";", 1)[0].strip().lower()
        return not mime or mime.startswith(TEXT_TYPES)
    return b"\x00" not in body[:1024]


def decode_body(body: bytes, content_type: str | None = None, max_size: int = MAX_BODY) -> str:
    """The text to parse: at most ``max_size`` bytes cut at a line end, BOM dropped."""
    if not is_text(content_type, body):
        return ""
    for size in (3, 2, 1):  # a BOM, or the start of one (Google skips those too)
        if body[:size] == BOM[:size]:
            body = body[size:]
            break
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
    """One origin's robots.txt verdicts until ``expires``."""

    kind: Kind
    token: str
    expires: float
    parser: Protego | None = None
    #: the plain (Google) reading's parser when its rules differ from ``parser``'s
    plain: Protego | None = None
    unreachable_since: float | None = None
    failures: int = 0
    status: int | None = None
    sitemaps: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, token: str, expires: float, status: int | None = 200) -> RobotsRules:
        prepared = prepare(text, token)
        parser = Protego.parse(prepared)
        plain = plain_rules(prepared)
        return cls(Kind.RULES, token, expires, parser, None if plain is None else Protego.parse(plain),
                   status=status, sitemaps=list(parser.sitemaps))

    def allowed(self, url: str) -> bool:
        """May ``url`` (as requested) be fetched? Only if both readings allow it."""
        if self.kind is Kind.UNREACHABLE:
            return False
        if self.kind is Kind.UNAVAILABLE or self.parser is None:
            return True
        key = agent_key(self.token)
        if not self.parser.can_fetch(url, key):
            return False
        if self.plain is None and "%" not in url:
            return True  # the plain reading compares the same octets
        return (self.plain or self.parser).can_fetch(url.replace("%", "%25"), key)

    def crawl_delay(self) -> float | None:
        """The ``Crawl-delay`` of the group that applies to us, if any."""
        if self.parser is None:
            return None
        try:
            delay = self.parser.crawl_delay(agent_key(self.token))
        except (TypeError, ValueError):  # a malformed value is no delay
            return None
        return float(delay) if delay is not None and delay > 0 else None
