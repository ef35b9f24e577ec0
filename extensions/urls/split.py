"""The parts of an http(s) URL the per-link tests need: one regular expression
for the common case, ``urlsplit`` for anything else (with the same answers)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["host_of", "netloc_path"]

# no tab/CR/LF (urlsplit deletes them) and no bracket in the netloc (urlsplit validates IPv6)
_HTTP = re.compile(r"https?://([^/?#\[\]\t\r\n]*)((?:/[^?#\t\r\n]*)?)(?:[?#][^\t\r\n]*)?")


def netloc_path(url: str) -> tuple[str, str]:
    """``(urlsplit(url).netloc, urlsplit(url).path)``; raises as it raises."""
    match = _HTTP.fullmatch(url)
    if match is not None and match.group(1).isascii():
        return match.group(1), match.group(2)
    parts = urlsplit(url)
    return parts.netloc, parts.path


def host_of(url: str) -> str:
    """``(urlsplit(url).hostname or "").lower()``; raises as ``urlsplit`` raises."""
    match = _HTTP.fullmatch(url)
    if match is not None and match.group(1).isascii():
        return match.group(1).rpartition("@")[2].partition(":")[0].lower()
    return (urlsplit(url).hostname or "").lower()
