"""A hosts-file resolver for stock Scrapy runs against the test web
(``TWISTED_DNS_RESOLVER = "testweb.hostsresolver.HostsFileResolver"``):
``DNS_HOSTS``'s names answered from the file (the first IPv4 entry first), the
others handed to ``DNS_HOSTS_FALLBACK_RESOLVER``. Our crawls use
:class:`extensions.dns.resolver.CachingResolver`, which reads the same file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import defer
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

from extensions.resolver import HostsTable, SimpleResolver, StatsSink, hosts_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.defer import Deferred
    from typing_extensions import Self

HIT_STAT = "dns/hosts_file/hit"
MALFORMED_STAT = "dns/hosts_file/malformed"


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
