"""A Scrapy extension the memory benchmarks put inside the crawl they measure.

Enabled only by a benchmark (``-s EXTENSIONS={"memprobe.MemoryProbe": 0}``,
with this file on ``PYTHONPATH`` under the name ``memprobe``, so the same
probe also runs inside another checkout of the crawler). It appends JSON
lines to ``MEMPROBE_FILE``:

* ``{"event": "before", "url", "rss", "peak"}`` when the response of a URL
  ending in ``MEMPROBE_URL_SUFFIX`` arrives (before the spider parses it),
  and ``{"event": "after", ...}`` when its item has passed every pipeline:
  the peak between the two is what processing that page cost;
* ``{"event": "mark", "pages", "rss", "peak", "sqlite", "components"}`` when
  the crawl has scraped each count of items in ``MEMPROBE_MARKS``:
  ``components`` maps a component (``extensions/frontier``,
  ``scrapy/core``, ``twisted``, ...) to the bytes Python allocated for it
  that are still alive (tracemalloc, when ``MEMPROBE_TRACEMALLOC_FRAMES`` >
  0; each allocation is charged to the innermost frame of our own code, or
  else to the innermost frame's package); ``sqlite`` is SQLite's own heap
  (``sqlite3_memory_used`` and its high-water mark), which tracemalloc
  cannot see. The spider is closed after the last mark when
  ``MEMPROBE_CLOSE_AT_LAST_MARK`` is true.

``rss`` and ``peak`` are the kernel's VmRSS and VmHWM (peak resident set
since the process started) in bytes.
"""

from __future__ import annotations

import ctypes
import json
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import _schedule_coro  # what Scrapy's CloseSpider uses

OWN_PACKAGES = ("extensions", "crawler")


def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    values: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) * 1024
    return {"rss": values.get("VmRSS", 0), "peak": values.get("VmHWM", 0)}


def sqlite_heap() -> dict[str, int]:
    """SQLite's allocator: bytes in use and the high-water mark (all
    connections of the process), or {} if the library is not reachable."""
    try:
        import _sqlite3  # noqa: PLC0415 - the library the crawl's connections use

        lib = ctypes.CDLL(_sqlite3.__file__)
        used, highwater = lib.sqlite3_memory_used, lib.sqlite3_memory_highwater
    except (OSError, AttributeError, ImportError):
        return {}
    used.restype = highwater.restype = ctypes.c_int64
    highwater.argtypes = [ctypes.c_int]
    return {"used": used(), "highwater": highwater(0)}


def component_of(filename: str) -> str | None:
    """``extensions/frontier`` for .../extensions/frontier/x.py; None outside our code."""
    parts = Path(filename).parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in OWN_PACKAGES and "site-packages" not in parts:
            tail = parts[index:index + 2]
            return "/".join(part.removesuffix(".py") for part in tail)
    return None


def package_of(filename: str) -> str:
    """``scrapy/core``, ``twisted``, ``lxml``... for a library file; the module for the stdlib."""
    parts = Path(filename).parts
    if "site-packages" in parts:
        rest = parts[parts.index("site-packages") + 1:]
        if rest and rest[0] == "scrapy" and len(rest) > 2:
            return f"scrapy/{rest[1]}"
        return rest[0].removesuffix(".py") if rest else filename
    return "stdlib/" + parts[-1].removesuffix(".py") if parts else filename


def components(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    """Live bytes per component, largest first."""
    totals: Counter[str] = Counter()
    for trace in snapshot.traces:
        frames = trace.traceback  # oldest first
        owner = None
        for frame in reversed(frames):
            owner = component_of(frame.filename)
            if owner:
                break
        totals[owner or package_of(frames[-1].filename)] += trace.size
    return dict(totals.most_common())


class MemoryProbe:
    """Records memory at the moments a benchmark asks for (see module doc)."""

    def __init__(self, crawler: Any, path: Path, suffix: str, marks: list[int], frames: int,
                 close_at_last: bool) -> None:
        self.crawler = crawler
        self.path = path
        self.suffix = suffix
        self.marks = sorted(marks)
        self.frames = frames
        self.close_at_last = close_at_last
        self.items = 0
        if frames > 0:
            tracemalloc.start(frames)

    @classmethod
    def from_crawler(cls, crawler: Any) -> MemoryProbe:
        settings = crawler.settings
        path = settings.get("MEMPROBE_FILE")
        if not path:
            raise NotConfigured("MEMPROBE_FILE not set")
        probe = cls(crawler, Path(path), settings.get("MEMPROBE_URL_SUFFIX", ""),
                    [int(mark) for mark in settings.getlist("MEMPROBE_MARKS")],
                    settings.getint("MEMPROBE_TRACEMALLOC_FRAMES", 0),
                    settings.getbool("MEMPROBE_CLOSE_AT_LAST_MARK", False))
        crawler.signals.connect(probe.response_received, signals.response_received)
        crawler.signals.connect(probe.item_scraped, signals.item_scraped)
        return probe

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def response_received(self, response: Any, request: Any, spider: Any = None) -> None:
        if self.suffix and response.url.endswith(self.suffix):
            self.write({"event": "before", "url": response.url, **proc_status()})

    def item_scraped(self, item: Any, response: Any = None, spider: Any = None) -> None:
        self.items += 1
        if self.suffix and response is not None and response.url.endswith(self.suffix):
            self.write({"event": "after", "url": response.url, **proc_status()})
        if self.items in self.marks:
            self.mark()

    def mark(self) -> None:
        record: dict[str, Any] = {"event": "mark", "pages": self.items, **proc_status(),
                                  "sqlite": sqlite_heap()}
        if self.frames > 0:
            record["tracemalloc"] = tracemalloc.get_traced_memory()[0]
            record["components"] = components(tracemalloc.take_snapshot())
        self.write(record)
        if self.close_at_last and self.items == self.marks[-1]:
            _schedule_coro(self.crawler.engine.close_spider_async(reason="memprobe_done"))
