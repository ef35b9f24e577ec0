"""The URL filter: every refusal reason, domain semantics, settings, stats."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from extensions.urls.filters import UrlFilter


class OnlyEven:
    """A user filter: allows URLs whose length is even."""

    def allows(self, url: str) -> bool:
        return len(url) % 2 == 0


class Built:
    """A user filter built from the crawler, reading its own setting."""

    def __init__(self, banned: str) -> None:
        self.banned = banned

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Built:
        return cls(crawler.settings.get("BANNED_WORD", "secret"))

    def allows(self, url: str) -> bool:
        return self.banned not in url


class NoAllows:
    pass


def make_filter(**settings: Any) -> UrlFilter:
    return UrlFilter.from_crawler(get_crawler(settings_dict=settings))


def plain(**kwargs: Any) -> UrlFilter:
    values: dict[str, Any] = {
        "schemes": ["http", "https"], "deny_patterns": [], "max_length": 2083, "max_depth": 0,
    }
    values.update(kwargs)
    return UrlFilter(**values)


def test_defaults_accept_an_ordinary_url() -> None:
    url_filter = make_filter()
    assert url_filter.reason("http://a.test/page", 3) is None
    assert url_filter.check("https://a.test/", 0)


@pytest.mark.parametrize("url", ["ftp://a.test/file", "mailto:x@a.test", "javascript:void(0)"])
def test_other_schemes_are_refused(url: str) -> None:
    assert plain().reason(url, 0) == "scheme"


def test_schemes_setting_widens_what_is_allowed() -> None:
    url_filter = make_filter(URL_FILTER_SCHEMES="http,ftp")
    assert url_filter.reason("ftp://a.test/file", 0) is None
    assert url_filter.reason("https://a.test/", 0) == "scheme"


def test_subdomains_are_allowed_but_not_lookalikes() -> None:
    url_filter = plain()
    url_filter.set_allowed_domains(["a.test", "B.org"])
    assert url_filter.reason("http://a.test/", 0) is None
    assert url_filter.reason("http://x.a.test/", 0) is None
    assert url_filter.reason("http://y.x.a.test:8080/p", 0) is None
    assert url_filter.reason("http://user@b.org/", 0) is None
    assert url_filter.reason("http://ba.test/", 0) == "domain"
    assert url_filter.reason("http://a.test.evil.com/", 0) == "domain"
    assert url_filter.reason("http://test/", 0) == "domain"
    # A host name in the query string is not the host.
    assert url_filter.reason("http://evil.com/?next=a.test", 0) == "domain"


def test_empty_domain_list_means_unrestricted() -> None:
    url_filter = plain()
    url_filter.set_allowed_domains(["a.test"])
    url_filter.set_allowed_domains([])
    assert url_filter.reason("http://anything.example/", 0) is None


def test_deny_patterns_are_searched_anywhere_in_the_url() -> None:
    url_filter = make_filter(URL_FILTER_DENY=[r"\.pdf$", r"/calendar/"])
    assert url_filter.reason("http://a.test/doc.pdf", 0) == "deny"
    assert url_filter.reason("http://a.test/x/calendar/2020", 0) == "deny"
    assert url_filter.reason("http://a.test/doc.pdf.html", 0) is None


def test_deny_from_command_line_is_comma_separated() -> None:
    url_filter = make_filter(URL_FILTER_DENY=r"\?sort=,logout")
    assert url_filter.reason("http://a.test/?sort=asc", 0) == "deny"
    assert url_filter.reason("http://a.test/logout", 0) == "deny"
    assert url_filter.reason("http://a.test/login", 0) is None


def test_too_long_urls_are_refused() -> None:
    url_filter = make_filter(URL_FILTER_MAX_LENGTH=30)
    assert url_filter.reason("http://a.test/" + "x" * 16, 0) is None  # 30 characters
    assert url_filter.reason("http://a.test/" + "x" * 17, 0) == "length"


def test_max_depth_setting_refuses_deeper_links() -> None:
    url_filter = make_filter(URL_FILTER_MAX_DEPTH=2, DEPTH_LIMIT=10)
    assert url_filter.reason("http://a.test/", 2) is None
    assert url_filter.reason("http://a.test/", 3) == "depth"


def test_depth_limit_is_used_when_max_depth_is_zero() -> None:
    assert make_filter(DEPTH_LIMIT=4).reason("http://a.test/", 5) == "depth"
    assert make_filter(DEPTH_LIMIT=4).reason("http://a.test/", 4) is None
    assert make_filter(DEPTH_LIMIT=0).reason("http://a.test/", 10_000) is None


def test_user_class_from_settings_decides_last() -> None:
    url_filter = make_filter(URL_FILTER_CLASS="tests.test_filters.OnlyEven")
    assert url_filter.reason("http://a.test/ab", 0) is None  # 16 characters
    assert url_filter.reason("http://a.test/abc", 0) == "user"
    # Built-in reasons come first.
    assert url_filter.reason("ftp://a.test/abc", 0) == "scheme"


def test_user_class_may_read_settings_through_from_crawler() -> None:
    url_filter = make_filter(URL_FILTER_CLASS="tests.test_filters.Built", BANNED_WORD="admin")
    assert url_filter.reason("http://a.test/admin/", 0) == "user"
    assert url_filter.reason("http://a.test/secret/", 0) is None


def test_invalid_regex_fails_at_start_naming_the_setting() -> None:
    with pytest.raises(ValueError, match=r"URL_FILTER_DENY.*\(unclosed"):
        make_filter(URL_FILTER_DENY=["(unclosed"])


@pytest.mark.parametrize("path", ["tests.test_filters.Missing", "no_such_module.Filter", "notapath"])
def test_bad_user_class_fails_at_start_naming_the_setting(path: str) -> None:
    with pytest.raises(ValueError, match=f"URL_FILTER_CLASS.*{path}"):
        make_filter(URL_FILTER_CLASS=path)


def test_user_class_without_allows_fails_at_start() -> None:
    with pytest.raises(ValueError, match="URL_FILTER_CLASS.*allows"):
        make_filter(URL_FILTER_CLASS="tests.test_filters.NoAllows")


def test_negative_max_length_fails_at_start() -> None:
    with pytest.raises(ValueError, match="URL_FILTER_MAX_LENGTH"):
        make_filter(URL_FILTER_MAX_LENGTH=-1)


def test_check_counts_each_refusal_by_reason_and_not_acceptances() -> None:
    crawler = get_crawler(settings_dict={
        "URL_FILTER_DENY": ["private"], "URL_FILTER_MAX_LENGTH": 40,
        "URL_FILTER_MAX_DEPTH": 1, "URL_FILTER_CLASS": "tests.test_filters.OnlyEven",
    })
    crawler.stats.open_spider()
    url_filter = UrlFilter.from_crawler(crawler)
    url_filter.set_allowed_domains(["a.test"])
    stats = crawler.stats
    assert url_filter.check("http://a.test/ab", 0, stats)
    assert not url_filter.check("gopher://a.test/", 0, stats)
    assert not url_filter.check("http://b.test/", 0, stats)
    assert not url_filter.check("http://b.test/x", 0, stats)
    assert not url_filter.check("http://a.test/private", 0, stats)
    assert not url_filter.check("http://a.test/" + "y" * 40, 0, stats)
    assert not url_filter.check("http://a.test/ab", 2, stats)
    assert not url_filter.check("http://a.test/abc", 0, stats)
    counted = {k: v for k, v in stats.get_stats().items() if k.startswith("urlfilter/")}
    assert counted == {
        "urlfilter/filtered/scheme": 1, "urlfilter/filtered/domain": 2,
        "urlfilter/filtered/deny": 1, "urlfilter/filtered/length": 1,
        "urlfilter/filtered/depth": 1, "urlfilter/filtered/user": 1,
    }


def test_check_without_stats_still_refuses() -> None:
    assert not plain(max_depth=1).check("http://a.test/", 2)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://trap.test/deep/a/a/a/", None),
        ("http://trap.test/deep/a/a/a/a/", "repeats"),
        ("http://a.test/x/y/x/y/x/y/x/y/z.html", "repeats"),
        ("http://a.test/a/b/c/d/e/f/g/h.html", None),  # deep but no repetition
        ("http://a.test/s?" + "&".join(f"k{i}=1" for i in range(12)), None),
        ("http://a.test/s?" + "&".join(f"k{i}=1" for i in range(13)), "query"),
        ("http://a.test/a&b&c&d&e&f&g&h&i&j&k&l&m/", None),  # "&" in a path is not a query
    ],
)
def test_trap_defences_with_default_limits(url: str, reason: str | None) -> None:
    assert make_filter().reason(url, 1) == reason


def test_trap_defences_are_counted_and_can_be_switched_off() -> None:
    stats: dict[str, int] = {}

    class Stats:
        def inc_value(self, key: str) -> None:
            stats[key] = stats.get(key, 0) + 1

    url = "http://trap.test/deep/a/a/a/a/a/"
    assert not make_filter().check(url, 1, Stats())
    assert stats == {"urlfilter/filtered/repeats": 1}
    assert make_filter(URL_FILTER_MAX_SEGMENT_REPEATS=0).check(url, 1)
