"""Hosts-file overrides in front of Scrapy's DNS resolution (``DNS_HOSTS``):
:class:`HostsFileResolver` answers a hosts(5) file's names (the first IPv4
entry first) and hands others to ``DNS_HOSTS_FALLBACK_RESOLVER``."""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

from scrapy.utils.misc import build_from_crawler, load_object

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from twisted.internet.defer import Deferred
    from typing_extensions import Self

logger = logging.getLogger(__name__)

HIT_STAT = "dns/hosts_file/hit"
MALFORMED_STAT = "dns/hosts_file/malformed"
SYSTEM_HOSTS = "/etc/hosts"


class SimpleResolver(Protocol):
    """What the overrides need from the resolver behind them."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]: ...


def normalise_name(name: str) -> str:
    """Host names compare case-insensitively and without a trailing dot."""
    return name.strip().rstrip(".").lower()


@dataclass
class HostsTable:
    """Name -> first IPv4 and first IPv6 address, as glibc reads /etc/hosts."""

    ipv4: dict[str, str] = field(default_factory=dict)
    ipv6: dict[str, str] = field(default_factory=dict)
    malformed: int = 0

    def __len__(self) -> int:
        return len(self.ipv4.keys() | self.ipv6.keys())

    def lookup(self, name: str) -> str | None:
        """The address for ``name``: its first IPv4 entry, else its first IPv6."""
        key = normalise_name(name)
        return self.ipv4.get(key) or self.ipv6.get(key)

    def add(self, address: str, names: Iterable[str]) -> None:
        family = self.ipv6 if ":" in address else self.ipv4
        for name in names:
            family.setdefault(normalise_name(name), address)


def parse_hosts(lines: Iterable[str], source: str = "<hosts>") -> HostsTable:
    """Parse hosts(5) lines; a malformed line is skipped with one warning."""
    table = HostsTable()
    for number, line in enumerate(lines, start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        address = _parse_address(fields[0])
        if address is None or len(fields) < 2:
            table.malformed += 1
            logger.warning("%s:%d: skipping malformed hosts line %r", source, number, line.rstrip("\n"))
            continue
        table.add(address, fields[1:])
    return table


def _parse_address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def load_hosts_file(path: str | Path) -> HostsTable:
    """Read a hosts file; a missing or unreadable file is an error naming DNS_HOSTS."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ValueError(f"DNS_HOSTS={str(path)!r}: cannot read hosts file: {err}") from err
    return parse_hosts(text.splitlines(), str(path))


def hosts_table(path: str | None, system: bool) -> HostsTable:
    """``DNS_HOSTS`` entries, then (``system``) those of /etc/hosts the file lacks."""
    table = load_hosts_file(path) if path else HostsTable()
    if path:
        logger.info("DNS_HOSTS=%s: %d names, %d malformed lines skipped",
                    path, len(table), table.malformed)
    if system and Path(SYSTEM_HOSTS).is_file():
        extra = load_hosts_file(SYSTEM_HOSTS)
        for family, entries in ((table.ipv4, extra.ipv4), (table.ipv6, extra.ipv6)):
            for name, address in entries.items():
                family.setdefault(name, address)
    return table


class StatsSink:
    """Counts resolver events in the stats of the crawlers it serves, found at count time."""

    def __init__(self, owner: Any = None):
        self.owner = owner

    def collectors(self) -> list[Any]:
        if self.owner is None:
            return []
        if getattr(self.owner, "stats", None) is not None:
            return [self.owner.stats]
        crawlers = getattr(self.owner, "crawlers", None) or ()
        return [c.stats for c in crawlers if getattr(c, "stats", None) is not None]

    def inc(self, key: str, count: int = 1) -> None:
        for stats in self.collectors():
            stats.inc_value(key, count)

    def set(self, key: str, value: Any) -> None:
        for stats in self.collectors():
            stats.set_value(key, value)


@implementer(IResolverSimple)
class HostsFileResolver:
    """``TWISTED_DNS_RESOLVER``: ``DNS_HOSTS`` entries first (not cached), then ``inner``."""

    def __init__(self, reactor: Any, inner: SimpleResolver, table: HostsTable,
                 stats: StatsSink | None = None):
        self.reactor = reactor
        self.inner: SimpleResolver = inner
        self.table: HostsTable = table
        self.stats: StatsSink = stats or StatsSink()

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> Self:
        settings = crawler.settings
        inner_cls = load_object(settings.get("DNS_HOSTS_FALLBACK_RESOLVER")
                                or "scrapy.resolver.CachingThreadedResolver")
        inner = build_from_crawler(inner_cls, crawler, reactor=reactor)
        return cls(reactor, inner, hosts_table(settings.get("DNS_HOSTS"), system=False), StatsSink(crawler))

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        address = self.table.lookup(name)
        if address is None:
            return self.inner.getHostByName(name, timeout)
        self.stats.inc(HIT_STAT)
        if self.table.malformed:
            self.stats.set(MALFORMED_STAT, self.table.malformed)
        return defer.succeed(address)
