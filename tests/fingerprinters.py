"""A project's own request fingerprinter (``REQUEST_FINGERPRINTER_CLASS``) for
the tests: one fingerprint per host, so a host's URLs are all one URL."""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

from scrapy import Request


class HostOnlyFingerprinter:
    """Every request of a host has the same fingerprint."""

    def fingerprint(self, request: Request) -> bytes:
        return hashlib.sha1(urlsplit(request.url).netloc.encode()).digest()  # noqa: S324
