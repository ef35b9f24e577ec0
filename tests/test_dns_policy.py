"""The address policy: which addresses a crawl may fetch (plain code, no I/O)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from extensions.dns.policy import AddressPolicy, describe_refusal, parse_networks, policy_from_settings


@pytest.mark.parametrize(("address", "category"), [
    ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("240.0.0.1", "reserved"),
    ("100.64.0.1", "non-global"),  # carrier-grade NAT: neither private nor global
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),  # IPv4-mapped
    ("[::1]", "loopback"),  # as an IPv6 URL host is written
])
def test_non_public_addresses_are_refused_by_default(address: str, category: str) -> None:
    assert AddressPolicy().refusal(address) == category


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111",
                                     "::ffff:93.184.216.34"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert AddressPolicy().refusal(address) is None


def test_allow_private_lifts_every_refusal() -> None:
    policy = AddressPolicy(allow_private=True)
    assert all(policy.refusal(a) is None for a in ("127.0.0.1", "10.0.0.1", "fe80::1", "::"))


def test_allowed_networks_lift_the_refusal_inside_them_only() -> None:
    policy = AddressPolicy(allowed_networks=parse_networks(["127.0.0.2/32", "fd00::/8"]))
    assert policy.refusal("127.0.0.2") is None
    assert policy.refusal("::ffff:127.0.0.2") is None
    assert policy.refusal("fd12::5") is None
    assert policy.refusal("127.0.0.1") == "loopback"


def test_settings_accept_a_comma_separated_network_list() -> None:
    policy = policy_from_settings(Settings({"ALLOWED_ADDRESS_NETWORKS": "10.0.0.0/8, 127.0.0.2/32"}))
    assert not policy.allow_private
    assert policy.refusal("10.9.9.9") is None and policy.refusal("127.0.0.2") is None
    assert policy_from_settings(Settings({"ALLOW_PRIVATE_ADDRESSES": "True"})).allow_private


def test_invalid_network_is_an_error_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="ALLOWED_ADDRESS_NETWORKS='10.0.0.0/40'"):
        policy_from_settings(Settings({"ALLOWED_ADDRESS_NETWORKS": ["10.0.0.0/40"]}))


def test_refusal_message_names_host_address_and_remedy() -> None:
    message = describe_refusal("intranet.test", "10.0.0.1", "private")
    assert message.startswith("intranet.test resolves to 10.0.0.1, a private address")
    assert "ALLOW_PRIVATE_ADDRESSES" in message
    assert describe_refusal("127.0.0.1", "127.0.0.1", "loopback").startswith(
        "127.0.0.1 is a loopback address")
    assert "an unspecified address" in describe_refusal("0.0.0.0", "0.0.0.0", "unspecified")
