"""Node ids for the link graph: close ids for close URLs.

WebGraph's compression feeds on locality (Boldi and Vigna, WWW 2004): ids
in the order of a key that groups a host's pages and sorts its URLs make
the gaps between successor ids small and put similar lists within the
reference window. The key is the host with its labels reversed
(``org.python.docs``: a site's subdomains together), the port, the path and
query with numbers compared as numbers (``p/9.html`` before ``p/10.html``:
numbered pages become intervals), then the scheme.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import numpy as np


_NUMBER = re.compile(r"\d+")


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
    # each run of digits prefixed by its length: numbers sort as numbers (9 -> 019, 10 -> 0210)
    numbered = _NUMBER.sub(lambda match: f"{len(match.group()):02d}{match.group()}", path)
    return (".".join(reversed(host.split("."))), port, numbered, parts.scheme)


def node_order(urls: Sequence[str]) -> np.ndarray:
    """``order[i]``: the position of ``urls[order[i]]`` is node id ``i``
    (a permutation of ``range(len(urls))``)."""
    return np.array(sorted(range(len(urls)), key=lambda i: order_key(urls[i])), dtype=np.int64)
