"""Content-seen: exact duplicates by fingerprint, near-duplicates by simhash.

Plain objects (no Scrapy) a pipeline calls per response: :mod:`.exact`'s
:class:`~.exact.ContentSeen` and :mod:`.nearindex`'s
:class:`~.nearindex.NearDuplicateIndex` keep their rows in a caller's SQLite
file (one file may hold both).
"""
