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
  cannot see; ``malloc``: glibc's bytes in use and free (:func:`malloc_heap`); ``store``: ``[bytes, known URLs]`` of a store that reports its memory
(Redis: its memory growth since the crawl began); with ``MEMPROBE_REDIS_KEYS``,
``redis_keys``: ``{key family: [keys, bytes]}`` (:func:`redis_key_families`); ``sites`` the same bytes by allocation site (``file:line``),
  the 40 largest; with ``MEMPROBE_CENSUS`` a forked copy of the process
  then writes ``{"event": "census", "pages", "census"}`` to
  ``MEMPROBE_FILE.census<pages>``: the bytes each
  component's objects reach (:func:`census`), without tracing. The spider is closed after the last mark when
  ``MEMPROBE_CLOSE_AT_LAST_MARK`` is true.

``rss`` and ``peak`` are the kernel's VmRSS and VmHWM (peak resident set
since the process started) in bytes.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import sys
import tracemalloc
import types
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


def sites(snapshot: tracemalloc.Snapshot, top: int) -> dict[str, int]:
    """Live bytes per allocation site (``file:line`` of the innermost frame in
    our own code, else of the innermost frame), the ``top`` largest."""
    totals: Counter[str] = Counter()
    for trace in snapshot.traces:
        frames = trace.traceback
        site = frames[-1]
        for frame in reversed(frames):
            if component_of(frame.filename):
                site = frame
                break
        parts = Path(site.filename).parts
        totals[f"{'/'.join(parts[-2:])}:{site.lineno}"] += trace.size
    return dict(totals.most_common(top))


#: objects the census does not descend into: code and namespaces, shared by everything
_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
           types.CodeType, types.FrameType, types.MethodWrapperType, types.WrapperDescriptorType)
CENSUS_DEPTH = 3


def census_roots(crawler: Any) -> list[tuple[str, Any]]:
    """The crawl's long-lived objects, one per component, named."""
    engine = crawler.engine
    roots: list[tuple[str, Any]] = [("scheduler", engine._slot.scheduler if engine._slot else None)]
    for label, manager in (("downloadermw", engine.downloader.middleware),
                           ("spidermw", engine.scraper.spidermw), ("pipeline", engine.scraper.itemproc),
                           ("extension", crawler.extensions)):
        roots += [(f"{label}/{type(mw).__name__}", mw) for mw in manager.middlewares]
    roots += [("downloader", engine.downloader), ("scraper", engine.scraper), ("stats", crawler.stats),
              ("spider", crawler.spider)]
    from twisted.internet import reactor  # noqa: PLC0415 - the running one
    roots.append(("reactor", reactor))
    for name, module in sorted(sys.modules.items()):
        if module is not None and name.split(".")[0] in OWN_PACKAGES:
            roots.append((f"module/{name}", module.__dict__))
    return [(name, obj) for name, obj in roots if obj is not None]


def census(crawler: Any) -> dict[str, int]:
    """Bytes reachable from each component's objects (``sys.getsizeof``
    summed over what its attributes reach, each object counted once, for the
    first root that reaches it), split by attribute down to
    :data:`CENSUS_DEPTH` levels (``scheduler.admission.host_counts``). Code,
    classes, modules, bound methods and the other roots are not entered.
    Sees Python objects only (not SQLite's or lxml's C heaps)."""
    roots = census_roots(crawler)
    seen = {id(obj) for _, obj in roots} | {id(crawler), id(crawler.engine), id(crawler.settings),
                                           id(crawler.signals), id(sys.modules)}
    sizes: Counter[str] = Counter()

    def deep(obj: Any) -> int:
        total, stack = 0, [obj]
        while stack:
            item = stack.pop()
            if id(item) in seen or isinstance(item, _OPAQUE):
                continue
            seen.add(id(item))
            total += sys.getsizeof(item, 0)
            stack.extend(gc.get_referents(item))
        return total

    def split(obj: Any, path: str, depth: int) -> None:
        splittable = not isinstance(obj, (dict, functools._lru_cache_wrapper, *_OPAQUE))
        attributes = getattr(obj, "__dict__", None) if splittable else None
        if isinstance(obj, dict) and path.startswith("module/"):
            attributes = obj
        if depth >= CENSUS_DEPTH or not isinstance(attributes, dict):
            sizes[path] += deep(obj)
            return
        seen.add(id(obj))
        sizes[path] += sys.getsizeof(obj, 0) + sys.getsizeof(attributes, 0)
        seen.add(id(attributes))
        for attribute, value in list(attributes.items()):
            if id(value) not in seen and not isinstance(value, _OPAQUE):
                split(value, f"{path}.{attribute}", depth + 1)

    for name, obj in roots:
        seen.discard(id(obj))
        split(obj, name, 1 if name.startswith("module/") else 0)
    return {path: size for path, size in sizes.most_common() if size >= 1024}


def garbage_bytes(types_out: dict[str, int] | None = None) -> int:
    """Bytes of the unreachable objects (cycles) the collector would free
    now, with the strings and bytes they refer to (an upper bound: some may
    be shared with live objects): kept by a full collection with
    ``DEBUG_SAVEALL``, then measured.
    For a forked copy only: it changes the collector's state."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    counted: set[int] = set()
    total = 0
    for item in gc.garbage:  # and the untracked objects (bytes, str) only they may hold
        for part in (item, *(ref for ref in gc.get_referents(item) if not gc.is_tracked(ref))):
            if id(part) not in counted:
                counted.add(id(part))
                size = sys.getsizeof(part, 0)
                total += size
                if types_out is not None:
                    name = type(part).__qualname__
                    types_out[name] = types_out.get(name, 0) + size
        if types_out is not None and isinstance(item, types.FrameType):
            code = item.f_code
            name = f"frame {Path(code.co_filename).name}:{code.co_name}"
            types_out[name] = types_out.get(name, 0) + 1
    gc.garbage.clear()
    gc.set_debug(0)
    return total


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def malloc_heap() -> dict[str, int]:
    """glibc's allocator (``mallinfo2``): bytes in use and free in its heaps
    (free: fragmentation and memory not given back), or {} elsewhere."""
    try:
        info = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return {}
    info.restype = _MallInfo2
    result = info()
    return {"in_use": result.uordblks + result.hblkhd, "free": result.fordblks}


def store_memory(crawler: Any) -> list[int] | None:
    """``[bytes, known URLs]`` of a frontier store that reports its memory
    (Redis: ``used_memory_dataset`` growth since the crawl began), else None."""
    store = getattr(getattr(crawler.engine, "scheduler", None), "store", None)
    report = store.memory_usage() if store is not None and hasattr(store, "memory_usage") else None
    return None if report is None else list(report)


def key_family(key: str) -> str:
    """A Redis key's family: hash tags and host or number parts replaced by
    ``*`` (``web:{3f}:urls`` -> ``web:{*}:urls``)."""
    return ":".join("{*}" if part.startswith("{") else "*" if "." in part or part.isdigit() else part
                    for part in key.split(":"))


def redis_key_families(url: str) -> dict[str, list[int]]:
    """``{family: [keys, bytes]}`` over every key of the Redis at ``url``
    (``MEMORY USAGE``, exact)."""
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(url)
    families: dict[str, list[int]] = {}
    try:
        for key in client.scan_iter(count=1000):
            entry = families.setdefault(key_family(key.decode()), [0, 0])
            entry[0] += 1
            entry[1] += client.memory_usage(key, samples=0) or 0
    finally:
        client.close()
    return families


class MemoryProbe:
    """Records memory at the moments a benchmark asks for (see module doc)."""

    def __init__(self, crawler: Any, path: Path, suffix: str, marks: list[int], frames: int,
                 close_at_last: bool, census: bool = False) -> None:
        self.crawler = crawler
        self.path = path
        self.suffix = suffix
        self.marks = sorted(marks)
        self.frames = frames
        self.close_at_last = close_at_last
        self.items = 0
        self.census = census
        self.children: list[int] = []
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
                    settings.getbool("MEMPROBE_CLOSE_AT_LAST_MARK", False),
                    settings.getbool("MEMPROBE_CENSUS", False))
        crawler.signals.connect(probe.response_received, signals.response_received)
        crawler.signals.connect(probe.item_scraped, signals.item_scraped)
        crawler.signals.connect(probe.spider_closed, signals.spider_closed)
        return probe

    def spider_closed(self) -> None:
        for pid in self.children:
            os.waitpid(pid, 0)

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
                                  "sqlite": sqlite_heap(), "malloc": malloc_heap()}
        if self.frames > 0:
            record["tracemalloc"] = tracemalloc.get_traced_memory()[0]
            snapshot = tracemalloc.take_snapshot()
            record["components"] = components(snapshot)
            record["sites"] = sites(snapshot, 40)
        record["store"] = store_memory(self.crawler)
        if self.crawler.settings.getbool("MEMPROBE_REDIS_KEYS"):
            record["redis_keys"] = redis_key_families(self.crawler.settings["REDIS_URL"])
        self.write(record)
        if self.census:
            self.fork_census()
        if self.close_at_last and self.items == self.marks[-1]:
            _schedule_coro(self.crawler.engine.close_spider_async(reason="memprobe_done"))

    def fork_census(self) -> None:
        """:func:`census` in a forked copy of this process (its walk costs the
        copy's memory, not the crawl's peak), appended as ``{"event":
        "census", "pages", "census"}`` when done."""
        pages = self.items
        pid = os.fork()
        if pid:
            self.children.append(pid)
            return
        try:
            gc.disable()
            kinds: dict[str, int] = {}
            garbage = garbage_bytes(kinds)  # first: the census leaves garbage of its own
            found = census(self.crawler)
            found["(cyclic garbage not collected yet)"] = garbage
            kinds = dict(sorted(kinds.items(), key=lambda item: -item[1])[:15])
            result = json.dumps({"event": "census", "pages": pages, "census": found, "garbage": kinds})
            self.path.with_name(f"{self.path.name}.census{pages}").write_text(result + "\n")
        finally:
            os._exit(0)
