"""Test components for the conditional-GET crawls (tests/test_conditional_get.py),
added to a real ``scrapy crawl web`` with ``-s``:

* :class:`InjectValidators` (downloader middleware, before the conditional
  GET middleware): puts ``revisit_validators`` on the request for each URL
  of the JSON file ``TEST_REVISIT_VALIDATORS_FILE`` (``{url: validators}``),
  as the frontier does for a re-visit;
* :class:`ProbeItems` (item pipeline, before content-seen): writes what the
  spider put on each item, internal fields included (which never reach the
  feed), one JSON object a line to ``TEST_ITEM_PROBE_FILE``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler

INJECT_ORDER = 700  # the conditional GET middleware is at 800
PROBE_ORDER = 250  # content-seen is at 300


class InjectValidators:
    def __init__(self, validators: dict[str, Any]) -> None:
        self.validators = validators

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> InjectValidators:
        path = crawler.settings.get("TEST_REVISIT_VALIDATORS_FILE")
        return cls(json.loads(Path(path).read_text()) if path else {})

    def process_request(self, request: Request, spider: Any = None) -> None:
        if request.url in self.validators and "revisit_validators" not in request.meta:
            request.meta["revisit_validators"] = self.validators[request.url]


class ProbeItems:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProbeItems:
        return cls(Path(crawler.settings.get("TEST_ITEM_PROBE_FILE")))

    def process_item(self, item: Any) -> Any:
        record = {
            "fields": sorted(item.keys()),
            "links": item.get("links"),
            **{key: item.get(key) for key in ("url", "final_url", "status", "not_modified", "etag",
                                                "last_modified", "processed", "length")},
        }
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")
        return item
