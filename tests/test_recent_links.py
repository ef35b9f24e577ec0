"""The spider's cache of recently yielded links (a URL-seen test before Scrapy)."""

from __future__ import annotations

import pytest

from extensions.urls.recent import RecentLinks


def test_a_link_passed_on_is_held_back_at_the_same_or_greater_depth() -> None:
    recent = RecentLinks(10)
    assert recent.fresh("http://a.test/", 3)
    assert not recent.fresh("http://a.test/", 3)
    assert not recent.fresh("http://a.test/", 5)


def test_a_link_seen_deeper_passes_again_when_found_closer_to_the_seeds() -> None:
    recent = RecentLinks(10)
    assert recent.fresh("http://a.test/x", 9)
    assert recent.fresh("http://a.test/x", 2)
    assert not recent.fresh("http://a.test/x", 4)


def test_the_cache_is_bounded_and_forgets_the_least_recently_used() -> None:
    recent = RecentLinks(2)
    recent.fresh("http://a.test/1", 1)
    recent.fresh("http://a.test/2", 1)
    assert not recent.fresh("http://a.test/1", 1)  # touches 1: 2 is now oldest
    recent.fresh("http://a.test/3", 1)
    assert len(recent) == 2
    assert recent.fresh("http://a.test/2", 1)  # forgotten, so passed on again
    assert recent.fresh("http://a.test/1", 1)  # evicted when 2 came back


def test_size_zero_passes_everything() -> None:
    recent = RecentLinks(0)
    assert recent.fresh("http://a.test/", 1) and recent.fresh("http://a.test/", 1)


def test_negative_size_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="LINKS_RECENT_CACHE_SIZE"):
        RecentLinks(-1)
