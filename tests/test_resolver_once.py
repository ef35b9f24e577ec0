"""Link resolution with the base split once per page
(extensions.urls.canonical.Resolver) gives exactly what resolve() (urljoin
per link) gives: for every reference hypothesis builds against many bases,
for the RFC 3986 section 5.4 examples and for the WHATWG URL test data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.urls.canonical import InvalidURL, Resolver, resolve
from tests.conformance import vectors


BASES = [
    "http://a/b/c/d;p?q", "http://a.test/dir/page.html", "http://a.test/dir/", "http://a.test",
    "http://a.test/", "https://u:p@a.test:8443/x/y/z?k=v#frag", "http://a.test/a/b/../c/./d.html",
    "http://[::1]:8080/p/q", "http://a.test//double//slash/", "https://a.test/;params/x;y?q",
    "ftp://a.test/pub/", "mailto:someone@a.test", "", "http://[::1/broken", "http://a.test/?",
]

# pieces of relative references, weighted toward what breaks path merging
PIECES = ["", "/", "//", ".", "..", "./", "../", "g", "g/", ";x", "?", "?y", "#", "#s", ":", "@",
          "http:", "https:", "http://h", "//h", "%2e", "%2E%2e", "\\", " ", "\t", "\n", "~", "a b",
          "[::1]", "[", "]", "javascript:", "ü", "%", "=", "&", "+"]


def outcome(function: Any, *args: str) -> tuple[str, str]:
    try:
        return "ok", function(*args)
    except InvalidURL:
        return "invalid", ""


def assert_same(base: str, href: str) -> None:
    assert outcome(Resolver(base).resolve, href) == outcome(resolve, base, href), (base, href)


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from(BASES), st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_resolver_equals_urljoin_for_built_references(base: str, href: str) -> None:
    assert_same(base, href)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(BASES), st.text(max_size=40))
def test_resolver_equals_urljoin_for_any_text(base: str, href: str) -> None:
    assert_same(base, href)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6).map(lambda parts: "http://h.test/" + "".join(parts)),
       st.lists(st.sampled_from(PIECES), max_size=6).map("".join))
def test_resolver_equals_urljoin_for_built_bases(base: str, href: str) -> None:
    assert_same(base, href)


def test_resolver_equals_urljoin_on_the_rfc3986_examples() -> None:
    cases = vectors("rfc3986_examples.json")
    assert len(cases) == 42
    for case in cases:
        assert_same(case["base"], case["input"])


def test_resolver_equals_urljoin_on_the_whatwg_url_test_data() -> None:
    cases = vectors("url_resolution.json")
    assert len(cases) == 482
    for case in cases:  # no base: the input is absolute, taken against the page's URL
        assert_same(case["base"] or "http://page.test/dir/x.html", case["input"])


def test_one_resolver_serves_many_references_without_reparsing_its_base(monkeypatch: pytest.MonkeyPatch) -> None:
    from extensions.urls import canonical

    calls: list[str] = []
    original = canonical.urlparse
    monkeypatch.setattr(canonical, "urlparse", lambda url, *a: calls.append(url) or original(url, *a))
    resolver = Resolver("http://a.test/dir/page.html")
    assert [resolver.resolve(href) for href in ("x", "../y", "/z")] == [
        "http://a.test/dir/x", "http://a.test/y", "http://a.test/z"]
    assert calls.count("http://a.test/dir/page.html") == 1


def test_joins_cached_across_pages_follow_each_pages_base() -> None:
    # the same references against bases that differ in scheme, host,
    # directory, last segment, params or query, twice over: a join cached
    # for one page must never answer for another whose result differs
    bases = ["http://a.test/p/1.html", "http://a.test/p/2.html?x=1", "http://a.test/q/1.html",
             "http://a.test/p/", "https://a.test/p/1.html", "http://b.test:8080/p/1.html",
             "http://a.test/p/1.html;v", "http://a.test/p/q/1.html", "http://a.test"]
    hrefs = ["1.html", "./1.html", "../p/1.html", "/p/1.html", "//c.test/x", "?y=2", ";w", "",
             "#f", "..", ".", "http:rel", "https://d.test/", "/"]
    for _ in range(2):
        for base in bases:
            for href in hrefs:
                assert_same(base, href)


# references with a host of their own: neither the base's host nor its directory may change them
OWN_HOST = st.tuples(st.sampled_from(["//", "http://", "https://", "HTTP://", "ftp://", "x+y.z://"]),
                     st.sampled_from(["h.test", "H.test:8080", "u:p@h.test", "[::1]", "[::1", "h.test:x"]),
                     st.lists(st.sampled_from([p for p in PIECES if p not in ("\\", " ", "\t", "\n")]),
                              max_size=6).map("".join)).map("".join)


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from([base for base in BASES if base.startswith("http")]), OWN_HOST)
def test_a_reference_with_its_own_host_resolves_as_urljoin_does(base: str, href: str) -> None:
    from urllib.parse import urljoin

    try:
        expected = ("ok", urljoin(base, href))
    except ValueError:
        expected = ("invalid", "")
    assert outcome(Resolver(base).resolve, href) == expected, (base, href)


def test_a_reference_with_its_own_host_is_joined_once_for_every_page_linking_it() -> None:
    from extensions.urls.canonical import _join

    _join.cache_clear()
    pages = [f"http://h{n}.test/d{n}/e/page{n}.html" for n in range(40)]
    hrefs = ["//x.test/a/../b", "http://x.test/c?q#f", "https://y.test/"]
    for page in pages:
        assert [Resolver(page).resolve(href) for href in hrefs] == [
            "http://x.test/a/../b", "http://x.test/c?q#f", "https://y.test/"]  # as urljoin: dots kept
    assert _join.cache_info().currsize == len(hrefs)


ABSOLUTE_PATH = st.lists(st.sampled_from(["/", "//", ".", "..", "./", "../", "x", "a.b", ";p", "?q", "#f", "%2e", ":",
                                          "@", "ü", "[", "%"]), max_size=8).map(lambda parts: "/" + "".join(parts))


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from([base for base in BASES if base.startswith("http")]), ABSOLUTE_PATH)
def test_an_absolute_path_resolves_as_urljoin_does(base: str, href: str) -> None:
    from urllib.parse import urljoin

    try:
        expected = ("ok", urljoin(base, href))
    except ValueError:
        expected = ("invalid", "")
    assert outcome(Resolver(base).resolve, href) == expected, (base, href)


def test_an_absolute_path_alone_is_joined_without_the_join_cache() -> None:
    from extensions.urls.canonical import _join

    _join.cache_clear()
    resolver = Resolver("http://a.test:8080/d/page.html?q=1")
    assert [resolver.resolve(href) for href in ("/p/1.html", "/p//2", "/a:b", "/p/./3", "/p/4?x")] == [
        "http://a.test:8080/p/1.html", "http://a.test:8080/p//2", "http://a.test:8080/a:b",
        "http://a.test:8080/p/3", "http://a.test:8080/p/4?x"]
    assert _join.cache_info().misses == 3  # the empty segment, the dot segment and the query only


RELATIVE_PATH = st.lists(st.sampled_from(["/", "//", ".", "..", "./", "../", "x", "a.b", ";p", "?q", "#f", "%2e", ":",
                                          "@", "ü", "[", "%", "~"]), min_size=1, max_size=8).map("".join)
DIRECTORY_BASES = ["http://a.test/p/1.html", "http://a.test/", "http://a.test", "https://a.test:8443/d/e/",
                   "http://a.test//x//y/z", "http://a.test/a/./b/../c/d", "http://a.test/a/b;p/c?q#f",
                   "http://u@a.test/%2e/x/", "http://[::1]/x/y"]


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from(DIRECTORY_BASES), RELATIVE_PATH)
def test_a_relative_path_resolves_as_urljoin_does(base: str, href: str) -> None:
    from urllib.parse import urljoin

    try:
        expected = ("ok", urljoin(base, href))
    except ValueError:
        expected = ("invalid", "")
    assert outcome(Resolver(base).resolve, href) == expected, (base, href)


def test_a_plain_relative_path_is_joined_without_the_join_cache() -> None:
    from extensions.urls.canonical import _join

    _join.cache_clear()
    assert [Resolver(base).resolve("p/3.html") for base in ("http://a.test", "http://a.test/", "http://a.test/d/x",
                                                             "http://a.test//d//e/x")] == [
        "http://a.test/p/3.html", "http://a.test/p/3.html", "http://a.test/d/p/3.html", "http://a.test/d/e/p/3.html"]
    assert Resolver("http://a.test/d/x").resolve("./3.html") == "http://a.test/d/3.html"
    assert _join.cache_info().misses == 1  # the dot segment only
