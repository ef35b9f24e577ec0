"""Recording the link graph (``LINKGRAPH_RECORD``): each judged page's accepted
outlinks and a redirect's ``Location``, by fingerprint and URL, into ``store.links``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin

from extensions.frontier.fingerprint import canonical_fingerprint, url_fingerprint
from extensions.frontier.page import PageVerdict
from extensions.frontier.store import LinkTable
from extensions.urls.canonical import canonicalize

#: the answers whose Location is the page's one outlink (a 304 may carry one too: not a redirect)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class LinkRecorder:
    """Writes each fetched page's outlinks into ``links`` (nothing when not ``enabled``)."""

    def __init__(self, links: LinkTable, stats: Any, enabled: bool = True) -> None:
        self.links, self.stats, self.enabled = links, stats, enabled

    def page_done(self, page: PageVerdict, source: int) -> list[int] | None:
        """Record the page's outlinks under ``source``; their fingerprints (None when off)."""
        if not self.enabled:
            return None
        fingerprints = [canonical_fingerprint(link) for link in page.links]
        if not page.not_modified:  # a 304 has no body: the list of its last 200 stands
            self.record(source, fingerprints, page.final_url or page.url, page.links)
        return fingerprints

    def redirected(self, url: str, status: int, location: bytes | None, base: str) -> None:
        """A fetch of ``url`` answered ``status``: a redirect's one outlink is recorded."""
        if not self.enabled or status not in REDIRECT_STATUSES or not location:
            return
        try:
            target_url = canonicalize(urljoin(base, location.decode("latin-1").strip()))
            target = canonical_fingerprint(target_url)  # url_fingerprint's, the canonical URL kept
            source, _ = url_fingerprint(url)
        except ValueError:
            self.stats.inc_value("linkgraph/bad_redirects")
            return
        self.record(source, [target], url, [target_url])
        self.stats.inc_value("linkgraph/redirects")

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        """``source``'s outlinks, each once, replacing an earlier list."""
        self.links.record(source, targets, url, target_urls)  # the table drops repeats
        self.stats.inc_value("linkgraph/pages")
        self.stats.inc_value("linkgraph/edges", len(set(targets)))
