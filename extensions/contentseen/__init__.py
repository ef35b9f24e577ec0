"""Content-seen: exact duplicates by fingerprint, near-duplicates by simhash.

Plain objects for a pipeline to call synchronously per response; no
Scrapy here. Per HTML response::

    text = visible_text(response.body, response.encoding)       # .text
    fingerprint = text_fingerprint(text)                        # .fingerprint (or
                                                                # bytes_fingerprint(body))
    duplicate_of = content_seen.duplicate_of(fingerprint, url)  # .exact
    simhash_value = simhash(text)                               # .simhash.simhash
    group_id, near_duplicate_of = near_index.add_or_match(simhash_value, url)  # .nearindex

``simhash`` is not re-exported: it would hide the module of the same
name. ``ContentSeen.open(path, ...)`` and
``NearDuplicateIndex.open(path, ...)`` take the SQLite file from the caller
(one file may hold both); both have ``flush()``, ``close()`` and ``stats()``.
"""

from __future__ import annotations

from extensions.contentseen.exact import ContentSeen, ContentStoreError
from extensions.contentseen.fingerprint import (
    MODES,
    NORMALISED,
    RAW,
    body_fingerprint,
    bytes_fingerprint,
    text_fingerprint,
)
from extensions.contentseen.nearindex import BlockLayout, Match, NearDuplicateIndex
from extensions.contentseen.simhash import hamming
from extensions.contentseen.text import visible_text

__all__ = [
    "MODES", "NORMALISED", "RAW", "BlockLayout", "ContentSeen", "ContentStoreError", "Match",
    "NearDuplicateIndex", "body_fingerprint", "bytes_fingerprint", "hamming", "text_fingerprint",
    "visible_text",
]
