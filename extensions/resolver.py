"""Hosts-file overrides (``DNS_HOSTS``): a hosts(5) file read as glibc reads it
(the first IPv4 entry of a name first), and the resolvers' stats sink."""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

SYSTEM_HOSTS = "/etc/hosts"


class SimpleResolver(Protocol):
    """What is asked of a resolver: a name's address."""

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
