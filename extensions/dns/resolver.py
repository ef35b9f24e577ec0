"""A caching asynchronous resolver (``TWISTED_DNS_RESOLVER``): the ``DNS_HOSTS``
file, a TTL-honouring LRU cache, one query in flight per name to
``DNS_NAMESERVERS``; every address passes the address policy."""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from scrapy.resolver import dnscache as scrapy_dnscache
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from twisted.names import client, dns
from twisted.names import error as dns_errors
from zope.interface import implementer

from extensions import defaults
from extensions.backends.settings import number_setting
from extensions.dns.policy import AddressPolicy, describe_refusal, parse_address, policy_from_settings
from extensions.resolver import HostsTable, StatsSink, hosts_table, normalise_name
from extensions.urls.recent import LruCache

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure
    from typing_extensions import Self

logger = logging.getLogger(__name__)

SYSTEM_RESOLV_CONF = "/etc/resolv.conf"
MAX_CNAME_CHAIN = 8
PUBLISH_EVERY = 64  # lookup-time stats are recomputed every this many queries
FLUSH_EVERY = 1024  # lookups counted locally before they are added to the stats

LOOKUPS, CACHE_HITS, QUERIES = "dns/lookups", "dns/cache_hits", "dns/queries"
FAILURES, HOSTS_FILE_HITS = "dns/failures", "dns/hosts_file/hit"
HOSTS_FILE_MALFORMED = "dns/hosts_file/malformed"
TIME_MEAN, TIME_P99 = "dns/lookup_time_mean_ms", "dns/lookup_time_p99_ms"

#: reason -> what the error message says about it
REASONS = {
    "nxdomain": "NXDOMAIN (no such domain)",
    "no_address": "no A record",
    "timeout": "timeout (no answer from the nameservers)",
    "servfail": "SERVFAIL (the nameserver failed)",
    "refused": "REFUSED by the nameserver",
    "error": "DNS error",
    "private_address": "refused address",
}


class DnsLookupError(DNSLookupError):
    """A failed lookup: ``host``, ``reason`` (a key of :data:`REASONS`) and
    ``negative_ttl`` (how long it may be cached; None: not at all)."""

    def __init__(self, host: str, reason: str, detail: str = "", negative_ttl: float | None = None):
        text = REASONS.get(reason, reason) + (f": {detail}" if detail else "")
        super().__init__(f"{host}: {text}")
        self.host, self.reason, self.negative_ttl = host, reason, negative_ttl


class AddressRefusedError(DnsLookupError):
    """``host`` resolved to ``address``, which the address policy refuses."""

    def __init__(self, host: str, address: str, category: str):
        DNSLookupError.__init__(self, describe_refusal(host, address, category))
        self.host, self.reason, self.negative_ttl = host, "private_address", None
        self.address, self.category = address, category


class CacheEntry(NamedTuple):
    """An answer until ``expires_at``: ``address``, or (negative, no address) ``reason``."""

    expires_at: float
    address: str | None = None
    reason: str | None = None


class DnsCache(LruCache):
    """LRU of at most ``size`` names, each an address or a negative answer until its TTL
    (the least recently used name goes first when full)."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"DNS_CACHE_SIZE={size!r}: must be >= 0")
        super().__init__(size)

    def live(self, name: str, now: float) -> CacheEntry | None:
        """The live entry for ``name`` (now most recently used), or None."""
        entry = self.get(name)
        if entry is None:
            return None
        if entry.expires_at <= now:
            del self[name]
            return None
        self.move_to_end(name)
        return entry


class LatencySample:
    """Count and sum of every duration, and the latest ``size`` for percentiles."""

    def __init__(self, size: int = 1024) -> None:
        self.values: deque[float] = deque(maxlen=size)
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.values.append(value)

    def percentile(self, fraction: float) -> float:
        """Nearest-rank percentile of the sample (``fraction`` in (0, 1])."""
        if not self.values:
            return 0.0
        ordered = sorted(self.values)
        return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]


class Answer(NamedTuple):
    address: str
    ttl: float


class TtlBounds(NamedTuple):
    """``DNS_MIN_TTL``, ``DNS_MAX_TTL`` and ``DNS_NEGATIVE_TTL`` (seconds)."""

    minimum: float = defaults.DNS_MIN_TTL
    maximum: float = defaults.DNS_MAX_TTL
    negative: float = defaults.DNS_NEGATIVE_TTL

    def clamp(self, ttl: float) -> float:
        return min(max(ttl, self.minimum), self.maximum)


def parse_nameserver(text: str) -> tuple[str, int]:
    """``"ip"``, ``"ip:port"``, ``"[ipv6]:port"`` or ``"ipv6"`` as (ip, port)."""
    text = text.strip()
    host, port = text, "53"
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.lstrip(":") or "53"
    elif text.count(":") == 1:
        host, port = text.split(":")
    address = parse_address(host)
    if address is None or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"DNS_NAMESERVERS={text!r}: expected ip[:port]")
    return str(address), int(port)


def soa_ttl(authority: Iterable[dns.RRHeader]) -> float | None:
    """RFC 2308: a negative answer lives min(SOA TTL, SOA minimum), if there is an SOA."""
    for record in authority:
        if record.type == dns.SOA:
            return min(record.ttl, record.payload.minimum)
    return None


def follow_chain(name: str, answers: Iterable[dns.RRHeader]) -> tuple[Answer | None, str, float]:
    """(answer, last name, TTL so far) following CNAMEs inside one answer section."""
    records = [r for r in answers if r.cls == dns.IN and r.type in (dns.A, dns.CNAME)]
    current, ttl = name, float("inf")
    for _ in range(MAX_CNAME_CHAIN + 1):
        owned = [r for r in records if r.name.name.decode("ascii", "replace").lower() == current]
        address = next((r for r in owned if r.type == dns.A), None)
        if address is not None:
            return Answer(address.payload.dottedQuad(), min(ttl, address.ttl)), current, ttl
        alias = next((r for r in owned if r.type == dns.CNAME), None)
        if alias is None:
            break
        ttl = min(ttl, alias.ttl)
        current = alias.payload.name.name.decode("ascii", "replace").lower()
    return None, current, ttl


class NameserverQuerier:
    """Asks nameservers for a name's A record within ``timeout``, ``retries + 1`` rounds."""

    def __init__(self, client_resolver: client.Resolver, timeout: float, retries: int,
                 on_query: Callable[[], None] = lambda: None):
        self.client = client_resolver
        self.timeout = timeout
        self.retries = retries
        self.on_query = on_query

    def resolve(self, name: str, hops: int = 0) -> Deferred[Answer]:
        """The first A record of ``name`` (CNAMEs followed), or a DnsLookupError."""
        self.on_query()
        servers = max(1, len(self.client.servers) + len(self.client.dynServers))
        per_try = (self.timeout / ((self.retries + 1) * servers),) * (self.retries + 1)
        d = self.client.queryUDP([dns.Query(name, dns.A, dns.IN)], per_try)
        d.addCallback(self.client.filterAnswers)  # rcode -> error; truncated -> TCP
        d.addCallbacks(self.answered, self.failed, callbackArgs=(name, hops), errbackArgs=(name,))
        return d

    def answered(self, sections: tuple[list[Any], list[Any], list[Any]], name: str,
                 hops: int) -> Answer | Deferred[Answer]:
        answers, authority, _ = sections
        answer, last, ttl = follow_chain(name, answers)
        if answer is not None:
            return answer
        if last != name and hops < MAX_CNAME_CHAIN:  # an alias whose target was not included
            d = self.resolve(last, hops + 1)
            d.addCallback(lambda found: Answer(found.address, min(found.ttl, ttl)))
            return d
        raise DnsLookupError(name, "no_address", negative_ttl=soa_ttl(authority))

    def failed(self, failure: Failure, name: str) -> Failure:
        err = failure.value
        if isinstance(err, DnsLookupError):
            return failure
        if isinstance(err, dns_errors.DNSNameError):
            message = err.args[0] if err.args else None
            raise DnsLookupError(name, "nxdomain", negative_ttl=soa_ttl(
                getattr(message, "authority", ()))) from err
        if isinstance(err, (defer.TimeoutError, dns_errors.DNSQueryTimeoutError)):
            raise DnsLookupError(name, "timeout", f"{self.timeout:g} s") from err
        if isinstance(err, dns_errors.DNSServerError):
            raise DnsLookupError(name, "servfail") from err
        if isinstance(err, dns_errors.DNSQueryRefusedError):
            raise DnsLookupError(name, "refused") from err
        raise DnsLookupError(name, "error", f"{type(err).__name__}: {err}") from err


@implementer(IResolverSimple)
class CachingResolver:
    """Hosts file, TTL cache, single-flight queries, address policy; stats ``dns/*``."""

    def __init__(self, reactor: Any, querier: NameserverQuerier, cache: DnsCache,
                 hosts: HostsTable | None = None, policy: AddressPolicy | None = None,
                 stats: StatsSink | None = None, ttl: TtlBounds = TtlBounds(),
                 clock: Callable[[], float] = time.monotonic):
        self.reactor = reactor
        self.querier = querier
        self.cache = cache
        self.hosts: HostsTable = hosts or HostsTable()
        self.policy: AddressPolicy = policy or AddressPolicy()
        self.stats: StatsSink = stats or StatsSink()
        self.ttl = ttl
        self.clock = clock
        self.in_flight: dict[str, list[Deferred[str]]] = {}
        self.lookup_times = LatencySample()
        # counted here (cheaper than a stats increment), flushed to the stats now and then
        self.counts: dict[str, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any,
                     clock: Callable[[], float] = time.monotonic) -> Self:
        settings = crawler.settings
        nameservers = [parse_nameserver(text) for text in settings.getlist(
            "DNS_NAMESERVERS", defaults.DNS_NAMESERVERS) if text.strip()]
        querier = NameserverQuerier(
            # DNS_NAMESERVERS, or those of /etc/resolv.conf if none
            client.Resolver(resolv=None if nameservers else SYSTEM_RESOLV_CONF, servers=nameservers or None,
                            reactor=reactor),
            defaults.checked(settings, "DNS_TIMEOUT", lambda value: value > 0, "> 0"),
            number_setting(settings, "DNS_RETRIES", 0, int))
        size = number_setting(settings, "DNS_CACHE_SIZE", 0, int)
        ttl = TtlBounds(*(number_setting(settings, name, 0) for name in ("DNS_MIN_TTL", "DNS_MAX_TTL", "DNS_NEGATIVE_TTL")))
        if ttl.minimum > ttl.maximum:
            raise ValueError(f"DNS_MIN_TTL={ttl.minimum!r} exceeds DNS_MAX_TTL={ttl.maximum!r}")
        cache = DnsCache(size if settings.getbool("DNSCACHE_ENABLED", True) else 0)
        hosts = hosts_table(settings.get("DNS_HOSTS"), system=not nameservers)
        resolver = cls(reactor, querier, cache, hosts, policy_from_settings(settings),
                       StatsSink(crawler), ttl, clock)
        querier.on_query = partial(resolver.count, QUERIES)
        logger.info("DNS: nameservers %s, cache %d names, TTL %g..%g s, timeout %g s, %d retries",
                    ", ".join(f"{ip}:{port}" for ip, port in nameservers) or SYSTEM_RESOLV_CONF,
                    size, ttl.minimum, ttl.maximum, querier.timeout, querier.retries)
        return resolver

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        """The address of ``name``; ``timeout`` is ignored in favour of DNS_TIMEOUT."""
        self.count(LOOKUPS)
        if self.counts[LOOKUPS] >= FLUSH_EVERY:
            self.flush_counts()
        key = normalise_name(name)
        address = self.hosts.lookup(key)
        if address is not None:
            self.count(HOSTS_FILE_HITS)
            return self.checked(key, address)
        entry = self.cache.live(key, self.clock())
        if entry is not None:
            self.count(CACHE_HITS)
            if entry.address is None:
                return self.failure(DnsLookupError(key, entry.reason or "error"))
            return self.checked(key, entry.address or "")
        if parse_address(key) is not None:  # a literal address (a seed such as http://10.0.0.7/)
            return self.checked(key, key)
        return self.join_or_query(key)

    def checked(self, name: str, address: str) -> Deferred[str]:
        """``address`` if the policy allows it, else an AddressRefusedError."""
        category = self.policy.refusal(address)
        if category is None:
            return defer.succeed(address)
        return self.failure(AddressRefusedError(name, address, category))

    def failure(self, error: DnsLookupError) -> Deferred[str]:
        self.count(FAILURES)
        self.count(f"{FAILURES}/{error.reason}")
        return defer.fail(error)

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def join_or_query(self, name: str) -> Deferred[str]:
        waiter: Deferred[str] = defer.Deferred()
        waiters = self.in_flight.get(name)
        if waiters is not None:
            waiters.append(waiter)
            return waiter
        self.in_flight[name] = [waiter]
        started = self.clock()
        d = self.querier.resolve(name)
        d.addCallbacks(self.resolved, self.unresolved, callbackArgs=(name, started),
                       errbackArgs=(name, started))
        return waiter

    def resolved(self, answer: Answer, name: str, started: float) -> None:
        now = self.clock()
        self.record_time(now - started)
        self.cache[name] = CacheEntry(now + self.ttl.clamp(answer.ttl), address=answer.address)
        scrapy_dnscache[name] = answer.address  # Scrapy's per-IP download slots read it
        for waiter in self.in_flight.pop(name, ()):
            if not waiter.called:  # a caller may have cancelled its wait
                self.checked(name, answer.address).chainDeferred(waiter)
        self.flush_counts()

    def unresolved(self, failure: Failure, name: str, started: float) -> None:
        now = self.clock()
        self.record_time(now - started)
        error = failure.value
        if not isinstance(error, DnsLookupError):  # a bug, not a DNS answer: still fail cleanly
            error = DnsLookupError(name, "error", f"{type(error).__name__}: {error}")
        if error.negative_ttl is not None or error.reason in ("nxdomain", "no_address"):
            ttl = self.ttl.negative if error.negative_ttl is None else error.negative_ttl
            self.cache[name] = CacheEntry(now + self.ttl.clamp(ttl), reason=error.reason)
        for waiter in self.in_flight.pop(name, ()):
            if not waiter.called:
                self.failure(error).chainDeferred(waiter)
        self.flush_counts()

    def record_time(self, seconds: float) -> None:
        self.lookup_times.add(seconds * 1000.0)
        if self.lookup_times.count <= PUBLISH_EVERY or not self.lookup_times.count % PUBLISH_EVERY:
            self.publish_times()

    def flush_counts(self) -> None:
        counts, self.counts = self.counts, {}
        for key, count in counts.items():
            self.stats.inc(key, count)

    def publish_stats(self) -> None:
        """Bring every stat up to date."""
        self.flush_counts()
        self.publish_times()
        if self.hosts.malformed:
            self.stats.set(HOSTS_FILE_MALFORMED, self.hosts.malformed)

    def publish_times(self) -> None:
        """Set the lookup-time stats from the sample."""
        if self.lookup_times.count:
            self.stats.set(TIME_MEAN, round(self.lookup_times.total / self.lookup_times.count, 3))
            self.stats.set(TIME_P99, round(self.lookup_times.percentile(0.99), 3))

