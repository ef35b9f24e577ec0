"""robots.txt decisions (extensions.robots.rules), with RFC 9309's own examples."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from extensions.robots.rules import (
    GOOGLE_MAX_LINE,
    Kind,
    RobotsRules,
    decode_body,
    is_text,
    kind_of_status,
    prepare,
    product_token,
)
from extensions.urls.canonical import canonicalize
from tests.conformance import vectors

HOST = "http://www.example.com"

# RFC 9309 section 5.1, "Simple Example", verbatim.
RFC_5_1 = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""

# RFC 9309 section 5.2, "Longest Match", verbatim.
RFC_5_2 = """\
User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
"""


def rules(text: str, token: str) -> RobotsRules:
    return RobotsRules.parse(text, token, expires=0.0)


@pytest.mark.parametrize(
    ("token", "path", "allowed"),
    [
        # "*": the group for every crawler without a group of its own
        ("otherbot", "/", True),
        ("otherbot", "/example/", False),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/publications/", True),
        ("otherbot", "/images/a.gif", False),
        ("otherbot", "/images/a.gif?x=1", True),  # "$" anchors the end
        # foobot: everything disallowed but the two allowed paths
        ("foobot", "/", False),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        # barbot and bazbot share one group (consecutive user-agent lines)
        ("barbot", "/example/page.html", False),
        ("barbot", "/example/other.html", True),
        ("bazbot", "/example/page.html", False),
        ("bazbot", "/publications/", True),
        # quxbot's group is empty: no restrictions, not the "*" group
        ("quxbot", "/example/", True),
        ("quxbot", "/a.gif", True),
        # product tokens match case-insensitively
        ("FooBot", "/", False),
        ("FOOBOT", "/example/page.html", True),
    ],
)
def test_rfc9309_simple_example(token: str, path: str, allowed: bool) -> None:
    assert rules(RFC_5_1, token).allowed(HOST + path) is allowed


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/example/page/", True),
        ("/example/page/other.html", True),
        ("/example/page/disallowed.gif", False),  # the longer (more specific) rule wins
    ],
)
def test_rfc9309_longest_match(path: str, allowed: bool) -> None:
    assert rules(RFC_5_2, "foobot").allowed(HOST + path) is allowed


def test_rfc9309_equivalent_allow_and_disallow_allow_wins() -> None:
    text = "User-agent: *\nDisallow: /page\nAllow: /page\n"
    assert rules(text, "bot").allowed(HOST + "/page")


def test_rfc9309_special_characters() -> None:
    text = ("User-agent: *\nDisallow: /\nAllow: /this/*/exactly\n"
            "Allow: /that/path/exactly$\n# Allow: /comment\n")
    parsed = rules(text, "bot")
    assert parsed.allowed(HOST + "/this/a/b/exactly")  # "*": any characters
    assert parsed.allowed(HOST + "/that/path/exactly")
    assert not parsed.allowed(HOST + "/that/path/exactlynot")  # "$": the end
    assert not parsed.allowed(HOST + "/comment")  # "#": a comment, not a rule
    assert not parsed.allowed(HOST + "/other")


@pytest.mark.parametrize(
    ("rule", "path"),
    [  # RFC 9309 section 2.2.2: percent-encoded and UTF-8 paths match alike
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar/\u30c4", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A"),
    ],
)
def test_rfc9309_percent_encoding(rule: str, path: str) -> None:
    parsed = rules(f"User-agent: *\nDisallow: {rule}\n", "bot")
    assert not parsed.allowed(HOST + path)
    assert parsed.allowed(HOST + "/foo/other")


def test_robots_txt_itself_is_always_allowed() -> None:
    assert rules("User-agent: *\nDisallow: /\n", "bot").allowed(HOST + "/robots.txt")


def test_product_token_from_settings() -> None:
    ua = "webcrawler/0.1 (+https://github.com/webcrawler/webcrawler)"
    assert product_token(None, ua) == "webcrawler"
    assert product_token("", ua) == "webcrawler"
    assert product_token("MyBot", ua) == "mybot"
    assert product_token(None, None) == "*"


def test_group_selection_by_product_token_not_full_user_agent() -> None:
    text = ("User-agent: webcrawler-news\nDisallow: /\n\n"
            "User-agent: webcrawler\nDisallow: /private/\n\n"
            "User-agent: *\nDisallow: /p/\n")
    parsed = rules(text, product_token(None, "webcrawler/0.1 (+https://x.test/)"))
    assert parsed.allowed(HOST + "/p/1.html")  # not the * group
    assert not parsed.allowed(HOST + "/private/a.html")  # the webcrawler group
    assert parsed.allowed(HOST + "/")  # not the webcrawler-news group


@pytest.mark.parametrize(
    ("status", "kind"),
    [(200, Kind.RULES), (204, Kind.RULES), (301, Kind.UNAVAILABLE), (400, Kind.UNAVAILABLE),
     (401, Kind.UNAVAILABLE), (403, Kind.UNAVAILABLE), (404, Kind.UNAVAILABLE),
     (429, Kind.UNAVAILABLE), (500, Kind.UNREACHABLE), (503, Kind.UNREACHABLE)],
)
def test_status_rules(status: int, kind: Kind) -> None:
    assert kind_of_status(status) is kind


def test_unavailable_allows_everything_unreachable_nothing() -> None:
    assert RobotsRules(Kind.UNAVAILABLE, "bot", 0.0).allowed(HOST + "/private/")
    assert not RobotsRules(Kind.UNREACHABLE, "bot", 0.0).allowed(HOST + "/")


def test_bom_and_crlf() -> None:
    text = decode_body(b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /private/\r\n", "text/plain")
    parsed = rules(text, "bot")
    assert not parsed.allowed(HOST + "/private/a.html")
    assert parsed.allowed(HOST + "/public.html")


def test_cut_at_limit_drops_the_partial_line() -> None:
    head = b"User-agent: *\nDisallow: /private/\n"
    body = head + b"Disallow: /p/\n"
    cut = len(head) + 11  # inside "Disallow: /p/"
    text = decode_body(body, "text/plain", max_size=cut)
    assert text == head.decode()
    parsed = rules(text, "bot")
    assert parsed.allowed(HOST + "/p/1.html")
    assert parsed.allowed(HOST + "/pub.html")  # not "Disallow: /p" half-read
    assert not parsed.allowed(HOST + "/private/x")


def test_rules_beyond_500_kib_are_ignored() -> None:
    padding = b"# " + b"x" * 98 + b"\n"
    body = b"User-agent: *\nDisallow: /private/\n" + padding * 5200 + b"Disallow: /p/\n"
    assert len(body) > 500 * 1024
    parsed = rules(decode_body(body, "text/plain"), "bot")
    assert not parsed.allowed(HOST + "/private/a")
    assert parsed.allowed(HOST + "/p/1.html")


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [("text/plain", b"a", True), ("text/plain; charset=utf-8", b"a", True),
     ("image/png", b"\x89PNG\r\n", False), ("text/html", b"<html>", True),
     (None, b"User-agent: *", True), (None, b"\x89PNG\x00\x00", False),
     ("application/octet-stream", b"User-agent: *", True)],
)
def test_non_text_bodies_are_empty(content_type: str | None, body: bytes, text: bool) -> None:
    assert is_text(content_type, body) is text
    assert bool(decode_body(body, content_type)) is text


def test_non_text_robots_allows_everything() -> None:
    text = decode_body(b"\x89PNG\r\n\x1a\nUser-agent: *\nDisallow: /\n", "image/png")
    assert rules(text, "bot").allowed(HOST + "/private/")


def test_crawl_delay_and_sitemaps() -> None:
    text = ("User-agent: *\nCrawl-delay: 2\nDisallow:\n\nUser-agent: webcrawler\nCrawl-delay: 0.5\n"
            "Sitemap: http://a.test/s1.xml\nSitemap: http://a.test/s2.xml\n")
    assert rules(text, "webcrawler").crawl_delay() == 0.5
    assert rules(text, "other").crawl_delay() == 2.0
    assert rules("User-agent: *\nDisallow:\n", "x").crawl_delay() is None
    assert rules(text, "x").sitemaps == ["http://a.test/s1.xml", "http://a.test/s2.xml"]


# -- where Protego alone reads RFC 9309 otherwise (extensions.robots.rules.prepare)

def test_user_agent_line_names_the_product_token_of_its_first_word() -> None:
    """Google's ID_UserAgentValueCaseInsensitive: ``FOO BAR`` is the group of ``foo``."""
    for line in ("User-Agent: FOO BAR", "User-Agent: foo bar", "User-Agent: FoO bAr",
                 "User-agent: Foo/1.0"):
        parsed = rules(f"{line}\nAllow: /x/\nDisallow: /\n", "foo")
        assert parsed.allowed(HOST + "/x/y"), line
        assert not parsed.allowed(HOST + "/a/b"), line


def test_group_applies_to_an_equal_token_only() -> None:
    """RFC 9309 2.2.1: the group that matches the product token; ``foo`` is
    not ``foobot`` (Protego's substring test said it was)."""
    text = "User-agent: foo\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"
    assert rules(text, "foobot").allowed(HOST + "/page")
    assert not rules(text, "foobot").allowed(HOST + "/private/a")
    assert not rules(text, "FOO").allowed(HOST + "/page")


@pytest.mark.parametrize("between", ["Invalid-Unknown-Line: unknown", "Sitemap: https://a.test/s.xml",
                                     "# a comment", ""])
def test_other_records_between_user_agent_lines_keep_one_group(between: str) -> None:
    """Google's ID_LineSyntax_Groups_OtherRules; RFC 9309 2.2.4: "Parsing of
    other records MUST NOT interfere with the parsing of explicitly defined
    records"."""
    text = f"User-agent: FooBot\n{between}\nUser-agent: *\nDisallow: /\n"
    assert not rules(text, "foobot").allowed(HOST + "/")
    assert not rules(text, "barbot").allowed(HOST + "/")


def test_crawl_delay_between_user_agent_lines_does_not_end_the_group() -> None:
    """RFC 9309 2.2.4: an other record does not terminate a group, Crawl-delay
    included (Protego ended the group there): ``*`` and ``webcrawler`` are one
    group, its rule and delay apply to both."""
    text = "User-agent: *\nCrawl-delay: 2\n\nUser-agent: webcrawler\nDisallow: /p/\n"
    for token in ("other", "webcrawler"):
        assert not rules(text, token).allowed(HOST + "/p/1"), token
        assert rules(text, token).crawl_delay() == 2.0, token


def test_rule_with_a_query_matches_the_url_the_crawler_requests() -> None:
    """Google's ID_Encoding#1: the crawler requests the query as written
    (not sorted, reserved characters not escaped), which the rule allows."""
    url = "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par"
    text = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n"
    assert canonicalize(url) == url
    assert rules(text, "foobot").allowed(url)
    assert not rules(text, "foobot").allowed("http://foo.bar/foo/bar?baz=http%3A%2F%2Ffoo.bar%3Ftar&par=&qux=taz")
    assert not rules(text, "foobot").allowed("http://foo.bar/foo/bar?qux=other")


@pytest.mark.parametrize(("rule", "url", "allowed"), [
    ("/foo/bar/%62%61%7A", "/foo/bar/baz", False),  # ID_Encoding#6: Google compares as written
    ("/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A", True),  # ID_Encoding#7
    ("/foo/bar/ツ", "/foo/bar/%E3%83%84", True),  # ID_Encoding#2: the rule's octets encoded
    ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84", True),  # escapes compared in upper case
    ("/~joe/", "/%7Ejoe/index.html", False),
    ("/%7Ejoe/", "/%7Ejoe/index.html", True),
])
def test_an_allow_applies_only_where_both_readings_match(rule: str, url: str, allowed: bool) -> None:
    """Protego decodes escaped unreserved characters on both sides, Google's
    parser compares octets as written: a URL is fetched only if the Allow
    matches in both, so ``Disallow: /`` keeps the rest."""
    assert rules(f"User-agent: FooBot\nDisallow: /\nAllow: {rule}\n", "foobot").allowed(HOST + url) is allowed


@pytest.mark.parametrize(("rule", "url"), [
    ("/foo/bar/%62%61%7A", "/foo/bar/baz"),  # RFC 9309 figure 4, last row
    ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
    ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
    ("/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"),
])
def test_a_disallow_applies_where_either_reading_matches(rule: str, url: str) -> None:
    assert not rules(f"User-agent: FooBot\nDisallow: {rule}\n", "foobot").allowed(HOST + url)


def test_google_reads_a_line_up_to_its_limit_and_that_reading_counts_too() -> None:
    """GoogleOnly_LineTooLong: a Disallow line past 16,663 bytes is cut by
    Google's parser, which then disallows more than the RFC reading does:
    not fetched. An Allow cut the same way allows nothing more (the RFC
    reading does not match it)."""
    longline = "/x/" + "a" * (GOOGLE_MAX_LINE - len("disallow: ") - 3 + 1)
    text = f"user-agent: FooBot\ndisallow: {longline}/qux\n"
    assert not rules(text, "foobot").allowed(f"http://foo.bar{longline}/fux")
    assert rules(text, "foobot").allowed("http://foo.bar/fux")
    allow = "/x/" + "b" * (GOOGLE_MAX_LINE - len("allow: ") - 3 + 1)
    text = f"user-agent: FooBot\ndisallow: /\nallow: {allow}/qux\n"
    assert not rules(text, "foobot").allowed(f"http://foo.bar{allow}/fux")
    assert rules(text, "foobot").allowed(f"http://foo.bar{allow}/qux")


def test_a_plain_file_needs_no_second_parser() -> None:
    assert rules("User-agent: *\nDisallow: /private/\n", "bot").plain is None
    assert rules("User-agent: *\nDisallow: /%7Eprivate/\n", "bot").plain is not None


def test_rfc9309_figure_4_reserved_characters_of_a_query() -> None:
    """RFC 9309 2.2.2 figure 4, row 2: /foo/bar?baz=https://foo.bar matches
    /foo/bar?baz=https%3A%2F%2Ffoo.bar."""
    parsed = rules("User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n", "bot")
    assert not parsed.allowed(HOST + "/foo/bar?baz=https%3A%2F%2Ffoo.bar")
    assert parsed.allowed(HOST + "/foo/bar?baz=other")


def test_an_empty_query_in_a_rule_is_not_widened_to_the_path() -> None:
    parsed = rules("User-agent: *\nDisallow: /page?\n", "bot")
    assert not parsed.allowed(HOST + "/page?x=1")
    assert parsed.allowed(HOST + "/page")
    assert parsed.allowed(HOST + "/pages")


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_a_partial_byte_order_mark_is_skipped(prefix: bytes) -> None:
    text = decode_body(prefix + b"User-agent: *\nDisallow: /x\n", "text/plain")
    assert not rules(text, "bot").allowed(HOST + "/x")


# -- the conformance vectors (tests/data/conformance; schemas in its SOURCE.md)

#: Google ID_* cases decided on a URL no request carries: a raw "ツ", which
#: the crawler sends percent-encoded, as in ID_Encoding#2 and #4 (the README's
#: robots.txt section has the RFC 9309 text).
RFC_DEVIATIONS = {"ID_Encoding#3", "ID_Encoding#5"}
GOOGLE_RFC = [c for c in vectors("robots_google.json") if not c["google_specific"]]
EXTRA = [c for c in vectors("robots_extra.json")
         if c["name"].startswith(("rfc9309:", "google_bom:"))]


@pytest.mark.parametrize("case", GOOGLE_RFC, ids=[c["name"] for c in GOOGLE_RFC])
def test_google_rfc_cases_on_the_url_the_crawler_requests(case: dict[str, Any]) -> None:
    parsed = rules(case["robots_txt"], product_token(case["user_agent"], None))
    verdict = parsed.allowed(canonicalize(case["url"]))
    assert verdict is (case["allowed"] ^ (case["name"] in RFC_DEVIATIONS))


@pytest.mark.parametrize("case", EXTRA, ids=[c["name"] for c in EXTRA])
def test_rfc9309_and_bom_vectors(case: dict[str, Any]) -> None:
    """All 43 ``rfc9309:*`` (the two Google disputes included: we side with
    the RFC) and 5 ``google_bom:*``, the BOM ones from their bytes."""
    if case.get("robots_txt_b64"):
        text = decode_body(base64.b64decode(case["robots_txt_b64"]), "text/plain")
    else:
        text = case["robots_txt"]
    parsed = rules(text, product_token(case["user_agent"], None))
    assert parsed.allowed(case["url"]) is case["allowed"]


def test_only_groups_that_can_apply_to_us_are_kept() -> None:
    """The cached parser holds our group and ``*``, not every crawler's."""
    text = ("User-agent: badbot\nUser-agent: evilbot\nDisallow: /\n\n"
            "User-agent: *\nDisallow: /private/\nSitemap: https://a.test/s.xml\n\n"
            "User-agent: webcrawler\nUser-agent: badbot\nDisallow: /mine/\n")
    prepared = prepare(text, "webcrawler")
    assert "badbot" not in prepared and "evilbot" not in prepared
    assert "Sitemap: https://a.test/s.xml" in prepared
    assert not rules(text, "webcrawler").allowed(HOST + "/mine/a")
    assert rules(text, "webcrawler").allowed(HOST + "/private/a")  # its own group, not *
    assert not rules(text, "otherbot").allowed(HOST + "/private/a")
    assert not rules(text, "badbot").allowed(HOST + "/")


@pytest.mark.parametrize("text", [
    "User-agent: *\nCrawl-delay: 2\nDisallow: /a\n\nUser-agent: x\nCrawl-delay: 9\nDisallow: /\n",
    "User-agent: *\nCrawl-delay: 2\nDisallow: /a\n\nUser-agent: x\nDisallow: /\nCrawl-delay: 9\n",
    "User-agent: *\nCrawl-delay: 2\nDisallow: /a\n\nUser-agent: x\nCrawl-delay: 9\n",
])
def test_another_crawlers_group_records_stay_with_it(text: str) -> None:
    """A dropped group's Crawl-delay never lands in the group before it."""
    assert rules(text, "webcrawler").crawl_delay() == 2.0
    assert rules(text, "x").crawl_delay() == 9.0
