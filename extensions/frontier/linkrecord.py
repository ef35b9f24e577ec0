"""Recording the link graph: every fetched page's outlinks, by URL fingerprint.

With ``LINKGRAPH_RECORD`` the frontier writes into ``store.links``: a
judged page (its final URL) gets its accepted outlinks (after the URL and
trap filters, before the URL-seen test, also for duplicates and with AOPIC
off), and a redirect gets its ``Location`` as its one outlink. Ids are the
URL database's keys (the fingerprints admission files URLs under). On
SQLite the lists go into the store's open transaction with the page's
other writes; on Redis into this process's link segments, flushed at each
checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin

from extensions.frontier.fingerprint import canonical_fingerprint, url_fingerprint
from extensions.frontier.page import PageVerdict
from extensions.frontier.store import LinkTable


#: the answers whose Location is the page's one outlink (a 304 may carry one too: not a redirect)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class LinkRecorder:
    """Writes each fetched page's outlinks into ``links`` (nothing when not ``enabled``)."""

    def __init__(self, links: LinkTable, stats: Any, enabled: bool = True) -> None:
        self.links, self.stats, self.enabled = links, stats, enabled

    def page_done(self, page: PageVerdict, source: int) -> list[int] | None:
        """Record the page's outlinks under ``source`` (the fingerprint of its
        final URL); return their fingerprints (one per link of ``page.links``,
        for AOPIC's credit step), None when off."""
        if not self.enabled:
            return None
        fingerprints = [canonical_fingerprint(link) for link in page.links]
        if not page.not_modified:  # a 304 has no body: the list of its last 200 stands
            self.record(source, fingerprints, page.final_url or page.url)
        return fingerprints

    def redirected(self, url: str, status: int, location: bytes | None, base: str) -> None:
        """A fetch of ``url`` answered ``status``: if a redirect, record its
        one outlink, ``location`` resolved against ``base`` (the response's URL)."""
        if not self.enabled or status not in REDIRECT_STATUSES or not location:
            return
        try:
            target, _ = url_fingerprint(urljoin(base, location.decode("latin-1").strip()))
            source, _ = url_fingerprint(url)
        except ValueError:
            self.stats.inc_value("linkgraph/bad_redirects")
            return
        self.record(source, [target], url)
        self.stats.inc_value("linkgraph/redirects")

    def record(self, source: int, targets: Sequence[int], url: str = "") -> None:
        """``source``'s outlinks, each once, replacing an earlier list
        (``url``: the source's, for stores that keep it)."""
        unique = list(dict.fromkeys(targets))
        self.links.record(source, unique, url)
        self.stats.inc_value("linkgraph/pages")
        self.stats.inc_value("linkgraph/edges", len(unique))
