"""Which addresses a crawl may connect to: global unicast only, unless
``ALLOW_PRIVATE_ADDRESSES`` or ``ALLOWED_ADDRESS_NETWORKS`` say otherwise."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from extensions import defaults

if TYPE_CHECKING:
    from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
VERDICTS_KEPT = 65536

#: (``ipaddress`` attribute, word in messages); ``is_private`` also holds for
#: the earlier ones, so the more precise words come first.
CATEGORIES = (
    ("is_unspecified", "unspecified"),
    ("is_loopback", "loopback"),
    ("is_link_local", "link-local"),
    ("is_multicast", "multicast"),
    ("is_reserved", "reserved"),
    ("is_private", "private"),
)


def parse_address(text: str) -> IPAddress | None:
    """``text`` as an IP address (brackets of an IPv6 URL host allowed), else None."""
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def address_category(address: IPAddress) -> str | None:
    """The non-public category of ``address`` ("loopback", ...), or None if
    global; an IPv4-mapped IPv6 address is judged as its IPv4 address."""
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    for attribute, word in CATEGORIES:
        if getattr(address, attribute):
            return word
    # shared (100.64/10), 6to4 relays and the like: not private, not global
    return None if address.is_global else "non-global"


class AddressPolicy:
    """Refuses non-public addresses, unless ``allow_private`` or inside ``allowed_networks``."""

    def __init__(self, allow_private: bool = False, allowed_networks: Iterable[IPNetwork] = ()):
        self.allow_private = allow_private
        self.allowed_networks: tuple[IPNetwork, ...] = tuple(allowed_networks)
        self._judged = lru_cache(maxsize=VERDICTS_KEPT)(self.judge)

    def refusal(self, address: str) -> str | None:
        """Why ``address`` is refused ("loopback", "private", ...), or None if allowed."""
        return None if self.allow_private else self._judged(address)

    def judge(self, address: str) -> str | None:
        parsed = parse_address(address)
        if parsed is None:
            return "unparsable"
        mapped = getattr(parsed, "ipv4_mapped", None)
        if any(address in network for address in (parsed, mapped) if address is not None for network in self.allowed_networks):
            return None
        return address_category(parsed)


def parse_networks(value: Iterable[str], setting: str = "ALLOWED_ADDRESS_NETWORKS") -> list[IPNetwork]:
    """CIDR strings as networks; an invalid one is an error naming the setting."""
    networks = []
    for text in value:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError as err:
            raise ValueError(f"{setting}={text!r}: not a network in CIDR notation: {err}") from err
    return networks


def policy_from_settings(settings: Any) -> AddressPolicy:
    """The policy ``ALLOW_PRIVATE_ADDRESSES`` and ``ALLOWED_ADDRESS_NETWORKS`` ask for."""
    networks = [text for text in settings.getlist("ALLOWED_ADDRESS_NETWORKS") if text.strip()]
    return AddressPolicy(settings.getbool("ALLOW_PRIVATE_ADDRESSES", defaults.ALLOW_PRIVATE_ADDRESSES), parse_networks(networks))


def describe_refusal(host: str, address: str, category: str) -> str:
    """The message of a refusal: which host, which address, what lifts it."""
    article = "an" if category[0] in "aeiou" else "a"
    what = f"is {article} {category} address" if host == address else \
        f"resolves to {address}, {article} {category} address"
    return f"{host} {what} (refused; ALLOW_PRIVATE_ADDRESSES or ALLOWED_ADDRESS_NETWORKS lift this)"
