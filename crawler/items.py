"""The one item the ``web`` spider yields per fetched document."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """What the crawler learned about one fetched document.

    ``url`` is the canonical URL as first requested (before redirects),
    ``final_url`` the URL the body came from. ``processed`` maps each
    processing module's name to what it found (tag counts, image size, ...).
    """

    url = scrapy.Field()
    final_url = scrapy.Field()
    status = scrapy.Field()
    content_type = scrapy.Field()
    length = scrapy.Field()
    fetched_at = scrapy.Field()
    depth = scrapy.Field()
    referer = scrapy.Field()
    outlinks = scrapy.Field()
    processed = scrapy.Field()
    importance = scrapy.Field()  # AOPIC history: cash that flowed through the page
    fingerprint = scrapy.Field()  # 64-bit content fingerprint, 16 hex digits
    duplicate_of = scrapy.Field()  # first URL with the same content (links not followed)
    simhash = scrapy.Field()  # 64-bit simhash of the visible text, 16 hex digits
    near_duplicate_of = scrapy.Field()  # closest earlier page within Hamming distance 3  # AOPIC history: cash that flowed through the page
    links = scrapy.Field()  # accepted outlinks, for the pipelines; removed before export
