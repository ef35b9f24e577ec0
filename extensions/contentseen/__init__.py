"""Content-seen: exact duplicates by fingerprint, near-duplicates by simhash.

Plain objects (no Scrapy) a pipeline calls per response; :class:`ContentSeen`
and :class:`NearDuplicateIndex` keep their rows in a caller's SQLite file
(one file may hold both). ``simhash`` stays a module, not a re-export.
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
