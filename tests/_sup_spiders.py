"""The spider the resolver, WARC, progress and frontier-crawl tests run with
``scrapy runspider`` (:func:`testweb.crawlrun.run_spider`).

It follows every link on the start URLs' hosts, so the tests need neither
the lead's ``web`` spider nor the project's settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy

FOLLOW_SPIDER = Path(__file__)


def follow_args(*urls: str) -> dict[str, str]:
    """:class:`FollowSpider`'s ``-a`` arguments for these start URLs."""
    return {"start": " ".join(urls)}


class FollowSpider(scrapy.Spider):
    """``-a start="URL URL ..."``: fetch them and follow same-host links."""

    name = "follow"
    custom_settings = {"ROBOTSTXT_OBEY": False, "HTTPERROR_ALLOW_ALL": True}

    def __init__(self, start: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.start_urls = start.split()
        self.hosts = {urlsplit(url).netloc for url in self.start_urls}

    async def start(self) -> AsyncIterator[Any]:
        for url in self.start_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        if not isinstance(response, scrapy.http.TextResponse):
            return
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc in self.hosts:
                yield scrapy.Request(url)
