"""Processing modules by MIME type (``PROCESSING_MODULES``: exact or fnmatch
pattern -> class paths). A processor returns fields of the item's
``processed``; one that raises is logged once and counted."""

from __future__ import annotations

import logging
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler, load_object

from extensions import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

class Processor(Protocol):
    """A processing module: reads a response, returns fields (or None)."""

    def process(self, response: Response) -> dict[str, Any] | None: ...


class ProcessorRegistry:
    """Processors per MIME type, each instance shared by the whole crawl."""

    def __init__(self, modules: dict[str, list[Processor]], stats: Any = None) -> None:
        self.patterns: list[tuple[str, list[Processor]]] = [
            (pattern.strip().lower(), processors) for pattern, processors in modules.items()
        ]
        self.stats = stats
        self._by_type: dict[str, list[Processor]] = {}
        self._failed: set[type] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProcessorRegistry:
        settings = crawler.settings
        raw = settings.get("PROCESSING_MODULES")
        try:
            modules = defaults.PROCESSING_MODULES if raw is None else settings.getdict("PROCESSING_MODULES")
        except (ValueError, TypeError) as err:  # JSONDecodeError is a ValueError
            raise ValueError(f"PROCESSING_MODULES must be a dict or JSON object, got {raw!r}") from err
        built: dict[Any, Processor | None] = {}  # one instance per class path
        instances: dict[str, list[Processor]] = {}
        for pattern, paths in modules.items():
            if isinstance(paths, str):
                paths = [paths]
            processors = (_build(crawler, path, built) for path in paths or ())
            instances[pattern] = [p for p in processors if p is not None]
        return cls(instances, crawler.stats)

    def for_type(self, mime: str) -> list[Processor]:
        """The processors of ``mime`` (lower-case, no parameters), cached."""
        found = self._by_type.get(mime)
        if found is None:
            found = self._by_type[mime] = self._match(mime)
        return found

    def _match(self, mime: str) -> list[Processor]:
        exact = [p for pattern, ps in self.patterns if pattern == mime for p in ps]
        wild = [p for pattern, ps in self.patterns
                if pattern != mime and any(c in pattern for c in "*?[") and fnmatchcase(mime, pattern) for p in ps]
        return list({id(processor): processor for processor in exact + wild}.values())  # each once

    def run(self, response: Response, mime: str) -> dict[str, Any]:
        """Merged results of ``mime``'s processors; a failing one is skipped."""
        merged: dict[str, Any] = {}
        links: list[str] = []
        for processor in self.for_type(mime):
            try:
                found = processor.process(response)
            except Exception as err:  # noqa: BLE001 - one bad module must not end the crawl
                self._failure(processor, response, err)
                continue
            if found:
                links.extend(found.get("links", ()))
                merged.update(found)
        if links or "links" in merged:
            merged["links"] = list(dict.fromkeys(links))
        return merged

    def _failure(self, processor: Processor, response: Response, err: Exception) -> None:
        kind = type(processor)
        if self.stats is not None:
            self.stats.inc_value(f"processors/errors/{kind.__name__}")
        if kind not in self._failed:
            self._failed.add(kind)
            logger.error(
                "Processor %s failed on %s (further failures only counted in "
                "processors/errors/%s): %r", kind.__name__, response.url, kind.__name__, err,
                exc_info=err,
            )


def _build(crawler: Crawler, path: Any, built: dict[Any, Processor | None]) -> Processor | None:
    """The single instance of class ``path``; None if it raised NotConfigured."""
    if path in built:
        return built[path]
    try:
        processor = build_from_crawler(load_object(path), crawler)
    except NotConfigured as err:
        logger.info("Processor %s disabled: %s", path, err)
        built[path] = None
        return None
    except (ImportError, NameError, ValueError, AttributeError, TypeError) as err:
        raise ValueError(f"PROCESSING_MODULES: cannot build {path!r}: {err}") from err
    if not callable(getattr(processor, "process", None)):
        raise ValueError(f"PROCESSING_MODULES: {path!r} has no process(response) method")
    built[path] = processor
    return processor
