"""The last item pipeline: internal fields (``scrapy.Field(internal=True)``) never reach a
feed; one left that names its ``consumer`` is logged once and counted
(``items/unconsumed/<field>``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def internal_fields(item_class: type) -> dict[str, str | None]:
    """The internal fields of ``item_class`` with their consumers (None: none)."""
    fields = getattr(item_class, "fields", {})
    return {name: meta.get("consumer") for name, meta in fields.items() if meta.get("internal")}


class InternalFields:
    """Removes internal fields; reports one left by a missing consumer."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self._fields: dict[type, dict[str, str | None]] = {}
        self._reported: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> InternalFields:
        return cls(crawler.stats)

    def process_item(self, item: Any) -> Any:
        kind = type(item)
        fields = self._fields.get(kind)
        if fields is None:
            fields = self._fields[kind] = internal_fields(kind)
        for name, consumer in fields.items():
            if name in item:
                del item[name]
                if consumer is not None:
                    self._unconsumed(name, consumer)
        return item

    def _unconsumed(self, name: str, consumer: str) -> None:
        self.stats.inc_value(f"items/unconsumed/{name}")
        if name not in self._reported:
            self._reported.add(name)
            logger.error(
                "Items reach the end of the item pipelines with their %r field: %s is not in "
                "ITEM_PIPELINES, so nothing used it (see crawler/items.py; further items "
                "only counted in items/unconsumed/%s)", name, consumer, name)
