"""The trap filter's signals on a page's links (pure: no crawl)."""

from __future__ import annotations

import pytest

from extensions.urls.traps import TrapSignals, date_template, is_token

TOKEN = "0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba98"


@pytest.mark.parametrize(("value", "expected"), [
    (TOKEN, True), ("a1B2c3D4e5F6g7H8", True), ("deadbeefdeadbeef", True),
    ("introduction-to-crawling", False), ("2026", False), ("short1a", False),
])
def test_a_token_is_a_long_generated_looking_value(value: str, expected: bool) -> None:
    assert is_token(value) is expected


@pytest.mark.parametrize(("page", "links", "expected"), [
    (f"http://s.test/?s={OTHER}", [f"http://s.test/c/{i}/?s={TOKEN}" for i in range(4)],
     [f"http://s.test/c/{i}/" for i in range(4)]),
    (f"http://s.test/;ssid={OTHER}", [f"http://s.test/c/{i}/;ssid={TOKEN}" for i in range(4)],
     [f"http://s.test/c/{i}/" for i in range(4)]),
    (f"http://s.test/sess/{OTHER}/", [f"http://s.test/sess/{TOKEN}/c/{i}/" for i in range(4)],
     [f"http://s.test/sess/{TOKEN}/c/{i}/" for i in range(4)]),
])
def test_a_token_the_server_changed_on_most_links_of_a_page_is_a_session_id(
        page: str, links: list[str], expected: list[str]) -> None:
    """The page was requested under one value and links every page under
    another: the server minted a new session."""
    signals = TrapSignals()
    assert signals.filter(page, links) == expected
    assert signals.counts["session_params"] == 1


def test_a_token_repeated_in_a_pages_links_is_only_suspected_and_never_rewritten() -> None:
    """A page reached without the value links most pages with it: it may be
    a session, or a content id (a repository's head commit); the links stay."""
    signals = TrapSignals()
    links = [f"http://s.test/c/{i}/?s={TOKEN}" for i in range(4)]
    assert signals.filter("http://s.test/", links) == links
    assert signals.counts["session_suspected"] == 1
    assert "session_params" not in signals.counts
    assert signals.filter("http://s.test/", links) == links  # same value on a second fetch: not proven


def test_a_content_id_repeated_in_a_commit_pages_links_keeps_its_parameter() -> None:
    """A version-control front end's commit page repeats its own commit id in
    most of its links (tree, diff, patch views): that id names content."""
    signals = TrapSignals()
    commit = "3f2a9c1e0b7d4a6f8e2c5b1d9a0f7e3c6b4d2a18"
    views = ("commit", "tree", "diff", "patch", "log", "stats", "plain/README", "plain/setup.py")
    links = [f"http://git.test/repo/{view}/?id={commit}" for view in views]
    links += ["http://git.test/repo/", "http://git.test/repo/refs/"]
    page = f"http://git.test/repo/commit/?id={commit}"
    assert signals.filter(page, links) == links
    assert "session_params" not in signals.counts
    later = [f"http://git.test/repo/tree/?id={'0' * 40}", f"http://git.test/repo/commit/?id={'1' * 40}"]
    assert signals.filter("http://git.test/repo/log/", later) == later
    assert "session_stripped" not in signals.counts


def test_a_value_that_differs_between_two_fetches_of_the_same_page_is_a_session_id() -> None:
    signals = TrapSignals()
    first = [f"http://s.test/c/{i}/?s={TOKEN}" for i in range(4)]
    assert signals.filter("http://s.test/", first) == first  # suspected
    second = [f"http://s.test/c/{i}/?s={OTHER}" for i in range(4)]
    assert signals.filter("http://s.test/", second) == [f"http://s.test/c/{i}/" for i in range(4)]
    assert signals.counts["session_params"] == 1


def test_a_learned_session_id_is_removed_from_the_hosts_later_links() -> None:
    signals = TrapSignals()
    signals.filter(f"http://s.test/?s={OTHER}", [f"http://s.test/c/{i}/?s={TOKEN}" for i in range(4)])
    later = signals.filter("http://s.test/c/1/", [f"http://s.test/p/1.html?q=x&s={OTHER}",
                                                  f"http://other.test/?s={OTHER}"])
    assert later == ["http://s.test/p/1.html?q=x", f"http://other.test/?s={OTHER}"]


def test_a_path_session_is_pinned_to_the_first_value_seen() -> None:
    signals = TrapSignals()
    signals.filter(f"http://s.test/sess/{OTHER}/", [f"http://s.test/sess/{TOKEN}/c/{i}/" for i in range(4)])
    assert signals.filter("http://s.test/x", [f"http://s.test/sess/{OTHER}/p/9.html"]) == [
        f"http://s.test/sess/{TOKEN}/p/9.html"]


def test_ids_on_a_few_links_of_a_page_are_not_a_session() -> None:
    """An item page linking its own edit/history views by id keeps the id."""
    signals = TrapSignals()
    links = [f"http://s.test/item/{view}?id={TOKEN}" for view in ("edit", "history", "print")]
    links += [f"http://s.test/nav/{n}.html" for n in range(10)]
    assert signals.filter(f"http://s.test/item?id={TOKEN}", links) == links
    assert "session_params" not in signals.counts


@pytest.mark.parametrize(("url", "expected"), [
    ("http://e.test/calendar/2026/05/", ("http://e.test/calendar/{date}/", "2026/05")),
    ("http://e.test/calendar/2026/05/14/", ("http://e.test/calendar/{date}/", "2026/05/14")),
    ("http://e.test/day/2026-05-14.html", ("http://e.test/day/{date}.html", "2026-05-14")),
    ("http://e.test/events?month=5&year=2026", ("http://e.test/events?month={}&year={}", "&month=5&year=2026")),
    ("http://e.test/blog/2015/post.html", None),
    ("http://e.test/p/12345678.html", None),
])
def test_dates_are_found_in_paths_and_date_named_arguments(url: str, expected: object) -> None:
    assert date_template(url) == expected


def test_a_calendar_gets_at_most_max_dates_per_template() -> None:
    signals = TrapSignals(max_dates=3)
    months = [f"http://e.test/calendar/2026/{m:02d}/" for m in range(1, 7)]
    kept = signals.filter("http://e.test/", months + months[:2])
    assert kept == months[:3] + months[:2]  # a date already allowed stays allowed
    assert signals.counts["filtered/calendar"] == 3
    assert signals.filter("http://e.test/", ["http://e.test/news/2026/05/14/story.html"])  # own template


def test_a_descent_longer_than_max_descent_is_cut() -> None:
    signals = TrapSignals(max_descent=2)
    assert signals.filter("http://w.test/archive/", ["http://w.test/archive/a/"])
    assert signals.filter("http://w.test/archive/a/", ["http://w.test/archive/a/b/"])
    assert signals.filter("http://w.test/archive/a/b/", ["http://w.test/archive/a/b/c/",
                                                          "http://w.test/archive/"]) == ["http://w.test/archive/"]
    assert signals.counts["filtered/descent"] == 1


def test_a_page_reached_without_descending_starts_a_new_descent() -> None:
    signals = TrapSignals(max_descent=1)
    signals.filter("http://w.test/", ["http://w.test/a/"])  # a descent step
    signals.filter("http://w.test/x/b.html", ["http://w.test/a/"])  # reached sideways too
    assert signals.filter("http://w.test/a/", ["http://w.test/a/b/"]) == ["http://w.test/a/b/"]


def test_the_filter_rewrites_an_items_links_and_counts_in_stats() -> None:
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.addon import default_settings  # noqa: PLC0415
    from extensions.urls.traps import TrapFilter  # noqa: PLC0415

    crawler = get_crawler(settings_dict=default_settings())
    crawler.stats.open_spider()
    pipeline = TrapFilter.from_crawler(crawler)
    item = {"url": f"http://s.test/?s={OTHER}", "links": [f"http://s.test/c/{i}/?s={TOKEN}" for i in range(4)]}
    assert pipeline.process_item(item)["links"] == [f"http://s.test/c/{i}/" for i in range(4)]
    assert crawler.stats.get_value("urlfilter/session_stripped") == 4
    assert pipeline.process_item({"url": "http://s.test/x"}) == {"url": "http://s.test/x"}  # no links


@pytest.mark.parametrize("value", ["-1", "many"])
def test_an_invalid_trap_setting_fails_at_start_naming_it(value: str) -> None:
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.addon import default_settings  # noqa: PLC0415
    from extensions.urls.traps import TrapFilter  # noqa: PLC0415

    crawler = get_crawler(settings_dict={**default_settings(), "URL_FILTER_MAX_DATES": value})
    with pytest.raises(ValueError, match="URL_FILTER_MAX_DATES"):
        TrapFilter.from_crawler(crawler)
