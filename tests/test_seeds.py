"""Seeds as users write them: bare domains and trailing comments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extensions.urls.seeds import SeedsError, iter_seed_lines, seed_of_line, with_scheme
from tests.conftest import fetched_urls
from testweb.crawlrun import run_web_crawl


@pytest.mark.parametrize(("seed", "expected"), [
    ("example.com", "http://example.com"),
    ("example.com/path?q=1", "http://example.com/path?q=1"),
    ("h.test:8080/a", "http://h.test:8080/a"),
    ("//example.com/", "http://example.com/"),
    ("https://example.com/", "https://example.com/"),
    ("ftp://example.com/x", "ftp://example.com/x"),
    ("mailto:someone@example.com", "mailto:someone@example.com"),
])
def test_a_seed_without_scheme_is_http(seed: str, expected: str) -> None:
    assert with_scheme(seed) == expected


@pytest.mark.parametrize(("line", "expected"), [
    ("http://a.test/ # the main site\n", "http://a.test/"),
    ("http://a.test/\t#tab comment", "http://a.test/"),
    ("a.test # bare, commented", "http://a.test"),
    ("http://a.test/page#section", "http://a.test/page#section"),
    ("  # only a comment", None),
    ("#http://a.test/", None),
    ("   \n", None),
])
def test_a_comment_starts_at_a_hash_after_whitespace(line: str, expected: str | None) -> None:
    assert seed_of_line(line) == expected


def test_a_seeds_file_yields_urls_with_schemes(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# my seeds\nexample.com\nhttp://b.test/x#frag  # note\n\n")
    assert list(iter_seed_lines(str(seeds))) == ["http://example.com", "http://b.test/x#frag"]


def test_bare_domains_on_the_command_line_are_seeds() -> None:
    assert list(iter_seed_lines("example.com,b.org/docs")) == ["http://example.com", "http://b.org/docs"]


@pytest.mark.parametrize("argument", ["seeds.txt", "./seeds", "/no/such/file.lst", "nodots"])
def test_a_missing_file_name_is_still_an_error(argument: str) -> None:
    with pytest.raises(SeedsError, match="file not found"):
        list(iter_seed_lines(argument))


def test_a_crawl_starts_from_a_bare_domain_and_ignores_comments(tmp_path: Path, start_web: Any) -> None:
    """Through ``scrapy crawl web``: both seeds are accepted and fetched."""
    web = start_web(hosts=3, pages=3, links=2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"h0000.test:{web.port}/  # bare domain\n"
                     f"{web.url('h0001.test', '/')} # with a comment\n")
    result = run_web_crawl(tmp_path / "crawl", str(seeds),
                           settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1})
    assert result.returncode == 0, result.log[-2000:]
    assert result.stats.get("seeds/accepted") == 2
    assert result.stats.get("seeds/invalid", 0) == 0
    fetched = fetched_urls(web)
    assert web.url("h0000.test", "/") in fetched
    assert web.url("h0001.test", "/") in fetched
