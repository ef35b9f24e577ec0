"""Politeness keys: exactly the key Scrapy's downloader gives its slots
(``Downloader.get_slot_key``): the ``download_slot`` meta, else the URL's
host name, or its IP from Scrapy's ``dnscache`` with
``CONCURRENT_REQUESTS_PER_IP``. The frontier stores the host part with each
URL and maps it to the IP when the URL reaches a back queue.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.resolver import dnscache
from scrapy.utils.httpobj import urlparse_cached

DOWNLOAD_SLOT = "download_slot"  # scrapy.core.downloader.Downloader.DOWNLOAD_SLOT


class HostKey:
    """Computes politeness keys; ``per_ip`` mirrors CONCURRENT_REQUESTS_PER_IP."""

    def __init__(self, per_ip: bool = False) -> None:
        self.per_ip = per_ip

    @staticmethod
    def host_of(request: Request) -> str:
        """The part stored with the URL: meta slot or host name."""
        meta_slot = request.meta.get(DOWNLOAD_SLOT)
        if meta_slot is not None:
            return str(meta_slot)
        return urlparse_cached(request).hostname or ""

    def key(self, host: str, explicit_slot: bool = False) -> str:
        """The downloader slot key of a stored host (IP in per-IP mode)."""
        if self.per_ip and not explicit_slot:
            return dnscache.get(host, host)
        return host

    def of_request(self, request: Request) -> str:
        """Scrapy's ``Downloader.get_slot_key(request)``."""
        explicit = request.meta.get(DOWNLOAD_SLOT) is not None
        return self.key(self.host_of(request), explicit)
