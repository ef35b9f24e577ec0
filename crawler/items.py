"""The one item the ``web`` spider yields per fetched document."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """What the crawler learned about one fetched document.

    ``url`` is the canonical URL as first requested (before redirects),
    ``final_url`` the URL the body came from. ``processed`` maps each
    processing module's name to what it found (tag counts, image size, ...).

    Fields declared ``internal=True`` carry data between the spider and the
    item pipelines and never reach a feed: the pipeline that uses one removes
    it, and :class:`extensions.pipelines.internal.InternalFields` (the last
    pipeline) removes whatever is left. ``duplicate_of``,
    ``near_duplicate_of``, ``simhash`` and ``fingerprint`` are set only when
    the content-seen test gave that verdict (absent: none).
    """

    url = scrapy.Field()
    final_url = scrapy.Field()
    status = scrapy.Field()
    content_type = scrapy.Field()
    length = scrapy.Field()
    fetched_at = scrapy.Field()
    depth = scrapy.Field()
    referer = scrapy.Field()
    outlinks = scrapy.Field()  # how many links the page had (before the URL filter)
    processed = scrapy.Field()
    importance = scrapy.Field()  # AOPIC history: cash that flowed through the page
    fingerprint = scrapy.Field()  # 64-bit content fingerprint, 16 hex digits
    duplicate_of = scrapy.Field()  # first URL with the same content (links not followed)
    simhash = scrapy.Field()  # 64-bit simhash of the visible text, 16 hex digits
    # the closest earlier page within CONTENTSEEN_NEAR_DISTANCE whose
    # resemblance reaches CONTENTSEEN_NEAR_MIN_RESEMBLANCE (its group joined)
    near_duplicate_of = scrapy.Field()
    # True on the item of a 304 Not Modified answer to a re-visit's conditional
    # GET (extensions.revisit.conditional): nothing parsed, no processing, no
    # links, no content-seen verdict; absent on every other item
    not_modified = scrapy.Field()

    # -- internal: spider -> pipelines -> frontier, never exported ---------------
    # accepted outlinks (list[str], canonical, past the URL filter), with
    # LINKS_IN_ITEMS; scheduled and removed by extensions.pipelines.links.LinkScheduler
    links = scrapy.Field(internal=True, consumer="extensions.pipelines.links.LinkScheduler")
    # extensions.contentseen.features.ContentFeatures of a 2xx document, with
    # CONTENTSEEN_ENABLED; judged and removed by ContentSeenPipeline
    content_features = scrapy.Field(internal=True,
                                    consumer="extensions.pipelines.contentseen.ContentSeenPipeline")
    # int | None, set by ContentSeenPipeline: the page's similar-content group
    # (an exact copy: its original's; None: not judged), for the frontier's URL database
    content_group = scrapy.Field(internal=True)
    # float in 0..1, set by extensions.pipelines.hostyield.HostYieldPipeline:
    # the share of the page's AOPIC cash (after the tax) its outlinks get,
    # the yield of its host (absent: all of it)
    credit_share = scrapy.Field(internal=True)
    # str | None: the response's ETag and Last-Modified exactly as sent (None:
    # none, or malformed and counted), on the item of every 2xx and of a 304
    # (which may carry them: None there means keep the stored ones); for the
    # frontier, which sends them back on the page's re-visit
    etag = scrapy.Field(internal=True)
    last_modified = scrapy.Field(internal=True)
