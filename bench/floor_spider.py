"""Scrapy's floor: a spider that fetches a fixed list of URLs and does nothing
else (no parsing, no link extraction, no item pipelines; Scrapy's default
scheduler). Its pages/s is what Scrapy's own engine allows on this machine
for the same pages; ours as a fraction of it is the headroom left.

Run with ``scrapy runspider`` from outside the project (so that none of our
settings apply), ``-a urls=FILE`` with one URL a line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy import Request, Spider


class FloorSpider(Spider):
    name = "floor"
    custom_settings = {"ITEM_PIPELINES": {}}

    def __init__(self, urls: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        with open(urls, encoding="utf-8") as handle:
            self.urls = [line.strip() for line in handle if line.strip()]

    async def start(self) -> Any:
        for url in self.urls:
            # dont_filter: the list is already unique; skip the dupe filter's fingerprinting
            yield Request(url, callback=self.parse, dont_filter=True)

    def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
        return iter(())
