"""Node ids for the link graph: close ids for close URLs.

WebGraph's compression feeds on locality (Boldi and Vigna, WWW 2004): most
links of a page go to pages of its own host, often to URLs that sort next
to it, and pages near each other share much of their link lists. Giving
ids in the order of a key that groups a host's pages, and within a host
sorts URLs lexicographically, makes the gaps between successor ids small
(short codes) and puts similar lists within the reference window.

The key is the host with its labels reversed (``docs.python.org`` ->
``org.python.docs``, so the subdomains of a site sit together, as in
reversed-domain URL orderings), then the port, the path and query, then
the scheme (``http`` and ``https`` copies of a page side by side). Numbers
in the path compare as numbers (``p/9.html`` before ``p/10.html``), so
numbered pages a listing links in sequence (page 8 to 11, chapter 2 to 5)
get consecutive ids: intervals, the cheapest thing BVGraph codes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import numpy as np


_NUMBER = re.compile(r"\d+")


def _numbers_in_order(text: str) -> str:
    """``text`` with each run of digits prefixed by its length, so that
    numbers sort as numbers (``9`` -> ``019``, ``10`` -> ``0210``)."""
    return _NUMBER.sub(lambda match: f"{len(match.group()):02d}{match.group()}", text)


def order_key(url: str) -> tuple[str, int, str, str]:
    """The sort key of ``url`` (unparsable URLs sort by their text, after
    every host)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or 0
    except ValueError:
        return ("\uffff", 0, url, "")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return (".".join(reversed(host.split("."))), port, _numbers_in_order(path), parts.scheme)


def node_order(urls: Sequence[str]) -> np.ndarray:
    """``order[i]``: the position of ``urls[order[i]]`` is node id ``i``
    (a permutation of ``range(len(urls))``)."""
    return np.array(sorted(range(len(urls)), key=lambda i: order_key(urls[i])), dtype=np.int64)
