"""Stock Scrapy fetching a list of URLs with ``ROBOTSTXT_OBEY``: the yardstick
of the robots.txt conformance test.

``scrapy runspider tests/robots_stock_spider.py -a seeds=FILE`` from a
directory without a project, so only Scrapy's defaults apply: its own
``RobotsTxtMiddleware`` with Protego. The test adds ``DNS_HOSTS`` and our
hosts-file resolver (``testweb.hostsresolver.HostsFileResolver``) so that the
case host names reach the loopback server; nothing else is ours.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class StockSpider(scrapy.Spider):
    """Fetch each URL of the seeds file once; follow nothing."""

    name = "stock"

    def __init__(self, seeds: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        with open(seeds, encoding="utf-8") as handle:
            self.seed_urls = [line.strip() for line in handle if line.strip()]

    async def start(self) -> AsyncIterator[Any]:
        for url in self.seed_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        yield {"url": response.url, "status": response.status}
