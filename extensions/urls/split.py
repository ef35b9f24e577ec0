"""The parts of an http(s) URL the per-link tests need, without ``urlsplit``.

For the common case (an ``http://`` or ``https://`` URL without tabs,
newlines or an IPv6 literal, with an ASCII authority) one regular expression
gives the parts; anything else goes to ``urlsplit``, so the answers are
always its answers. Pure: no Scrapy.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["host_of", "netloc_path"]

# scheme, netloc (up to the first "/", "?" or "#"), path (up to "?" or "#");
# no tab/CR/LF anywhere (urlsplit deletes them) and no bracket in the netloc
# (urlsplit validates an IPv6 literal)
_HTTP = re.compile(r"https?://([^/?#\[\]\t\r\n]*)((?:/[^?#\t\r\n]*)?)(?:[?#][^\t\r\n]*)?")


def netloc_path(url: str) -> tuple[str, str]:
    """``(urlsplit(url).netloc, urlsplit(url).path)``; raises as it raises."""
    match = _HTTP.fullmatch(url)
    if match is not None and match.group(1).isascii():
        return match.group(1), match.group(2)
    parts = urlsplit(url)
    return parts.netloc, parts.path


def host_of(url: str) -> str:
    """``(urlsplit(url).hostname or "").lower()``: the lower-case host
    without userinfo, port or brackets; raises as ``urlsplit`` raises."""
    match = _HTTP.fullmatch(url)
    if match is not None and match.group(1).isascii():
        return match.group(1).rpartition("@")[2].partition(":")[0].lower()
    return (urlsplit(url).hostname or "").lower()
