"""extensions.urls.split gives urlsplit's answers, faster, for every URL."""

from __future__ import annotations

import random
from urllib.parse import urlsplit

import pytest

from extensions.frontier.fingerprint import canonical_fingerprint, fingerprint
from extensions.urls.split import host_of, netloc_path

_PIECES = ["http://", "https://", "HTTP://", "ftp://", "h", "a", ".", "/", "?", "#", "@", ":", "[", "]",
           "::1", "80", "\t", "\n", "\r", " ", "\u00e9", "%41", "x.test", "u:p@", ";", "=", "&", "//", "\x00",
           "X.Test", "%"]


def _reference(url: str) -> tuple[object, ...]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ("error",)
    return parts.netloc, parts.path, (parts.hostname or "").lower()


def _fast(url: str) -> tuple[object, ...]:
    try:
        netloc, path = netloc_path(url)
        return netloc, path, host_of(url)
    except ValueError:
        return ("error",)


@pytest.mark.parametrize("url", [
    "http://a.test/", "https://a.test:8443/x/y;p=1?q=2#f", "http://u:p@A.Test:80/p", "http://a.test",
    "http://a.test?x=1/2", "http://a.test#x/y", "http://[::1]:8080/x", "http://[::1/x", "http://]x/",
    "http://a.t\test/", "http://\u00e9.test/", "http://a.test/\u00e9?\u00e9", "http://%41.test/", "http:a/b",
    "http:///path", "http://:@/", " http://a.test/", "mailto:x@y", "",
])
def test_known_urls_split_as_urlsplit_splits(url: str) -> None:
    assert _fast(url) == _reference(url)


def test_random_urls_split_as_urlsplit_splits() -> None:
    rng = random.Random(17)
    for _ in range(20000):
        url = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 9)))
        if rng.random() < 0.7:
            url = rng.choice(["http://", "https://"]) + url
        assert _fast(url) == _reference(url), url


def test_canonical_fingerprint_uses_the_lower_case_host() -> None:
    url = "http://u@www.example.test:8080/a?b=1"
    assert canonical_fingerprint(url) == fingerprint(url, "www.example.test")


def test_ascii_url_canonical_form_ignores_an_ascii_compatible_encoding() -> None:
    """One cache entry for the extractor's call (with the page's encoding) and the frontier's."""
    from extensions.urls.canonical import _canonicalize, canonicalize  # noqa: PLC0415
    from w3lib.url import safe_url_string  # noqa: PLC0415

    url = "http://Cache.Test/b?z=1&a=%7E#f"
    before = _canonicalize.cache_info().hits
    assert canonicalize(url, encoding="utf-8") == canonicalize(url)
    assert _canonicalize.cache_info().hits == before + 1
    for encoding in ("utf-8", "cp1252", "latin-1", "ascii"):
        assert canonicalize(url, encoding=encoding) == "http://cache.test/b?z=1&a=%7E"
    non_ascii = "http://cache.test/p?q=\u00e9"
    assert canonicalize(non_ascii, encoding="cp1252") == safe_url_string(non_ascii, encoding="cp1252")
    assert canonicalize(non_ascii, encoding="cp1252") != canonicalize(non_ascii)


def test_date_hint_never_hides_a_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trap tests' cheap pre-test only skips URLs date_template finds no date in."""
    from extensions.urls import traps  # noqa: PLC0415

    class Always:
        def search(self, url: str) -> bool:
            return True

    pieces = ["http://a.test", "/", "2026", "1999", "-", "05", "13", "1", "?", "&", "year=", "month=", "x=",
              "=", "7", "2026-05-14", "/2026/05/", "a", "s", "day=3", "yrs=12", "0"]
    rng = random.Random(5)
    urls = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))) for _ in range(20000)]
    hinted = [traps.date_template(url) for url in urls]
    monkeypatch.setattr(traps, "_DATE_HINT", Always())
    assert hinted == [traps.date_template(url) for url in urls]
    assert sum(found is not None for found in hinted) > 1000  # the dates were there to find
