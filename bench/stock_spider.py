"""A plain Scrapy CrawlSpider on stock settings: the baseline our crawler is
measured against. Run with ``scrapy runspider`` from outside the project so
that none of our settings apply (the bench adds only the hosts-file resolver,
without which stock Scrapy cannot reach the synthetic web's names).
"""

from __future__ import annotations

from typing import Any

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockSpider(CrawlSpider):
    name = "stock"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, seeds: str = "", allowed_domains: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        if allowed_domains:  # comma-separated, as our spider takes it
            self.allowed_domains = [name for name in allowed_domains.split(",") if name]
        with open(seeds, encoding="utf-8") as handle:
            self.start_urls = [
                line.strip() for line in handle if line.strip() and not line.startswith("#")
            ]

    def parse_start_url(self, response, **kwargs: Any) -> Any:
        return self.parse_page(response)

    def parse_page(self, response) -> dict[str, Any]:
        return {"url": response.url, "status": response.status, "length": len(response.body)}
