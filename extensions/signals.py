"""Signals our components send each other through Scrapy's signal manager.

Connect with ``crawler.signals.connect(handler, signal=host_assigned)``.
"""

from __future__ import annotations

#: The frontier gave ``host`` (its politeness key: a host name, or an IP
#: address under ``CONCURRENT_REQUESTS_PER_IP``) a back queue, so a fetch of
#: it is coming soon: the moment to resolve its name (DNS prefetch).
#: Arguments: ``host``.
host_assigned = object()
