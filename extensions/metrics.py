"""Live Prometheus metrics (``METRICS_PORT``): ``/metrics`` served by
prometheus-client on a registry of its own, built from the crawler's stats
at each scrape; crawl-wide gauges carry ``scope="crawl"`` and ``process``
(take their ``max``, never their ``sum``)."""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from extensions import defaults

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler

    from extensions.prometheus import MetricsServer

logger = logging.getLogger(__name__)


class MetricsExporter:
    """Serves the metrics until ``spider_closed``; NotConfigured when ``METRICS_PORT`` is 0."""

    def __init__(self, server: MetricsServer) -> None:
        self.server = server

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        port = crawler.settings.getint("METRICS_PORT", defaults.METRICS_PORT)
        if port == 0:
            raise NotConfigured
        if not 0 < port < 65536:
            raise ValueError(f"METRICS_PORT={port!r}: must be a TCP port (1-65535), or 0 for no metrics")
        host = crawler.settings.get("METRICS_HOST", defaults.METRICS_HOST)
        # prometheus-client only when metrics are served (start-up CPU of every crawl)
        from prometheus_client import CollectorRegistry  # noqa: PLC0415

        from extensions.prometheus import CrawlStatsCollector, MetricsServer  # noqa: PLC0415

        registry = CollectorRegistry()
        # dict.copy() of the stats dict runs in C under the GIL: the HTTP
        # thread gets a consistent copy while the reactor keeps counting
        process = f"{socket.gethostname()}:{os.getpid()}"  # the label of crawl-wide gauges
        registry.register(CrawlStatsCollector(lambda: crawler.stats.get_stats().copy(), process))
        exporter = cls(MetricsServer(registry, host, port))
        exporter.server.start()
        logger.info("Serving Prometheus metrics on %s", exporter.server.url)
        crawler.signals.connect(exporter.server.stop, signal=signals.spider_closed)
        crawler.signals.connect(exporter.server.stop, signal=signals.engine_stopped)
        return exporter
