"""Path-ascending crawling (``LINKS_PATH_ASCENDING``): a fetched URL's
ancestor directories, ``http://a.test/x/y/p.html`` -> ``/x/y/``, ``/x/``, ``/``."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def ancestors(url: str) -> list[str]:
    """The directories above ``url``, nearest first (query and fragment dropped)."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:]  # "" for "/", last one is the file or ""
    result = []
    for keep in range(len(segments) - 1, -1, -1):
        path = "/" + "".join(segment + "/" for segment in segments[:keep])
        if path != parts.path or parts.query:
            result.append(urlunsplit((parts.scheme, parts.netloc, path, "", "")))
    return list(dict.fromkeys(result))
