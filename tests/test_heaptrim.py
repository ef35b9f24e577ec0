"""HeapTrim: glibc's free heap memory handed back to the kernel at an interval
during a crawl (a real malloc_trim on this process's heap, and a real crawl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from extensions.heaptrim import HeapTrim, malloc_trim, resident_bytes
from testweb.crawlrun import run_web_crawl

MB = 1024 * 1024


def test_a_trim_gives_the_heaps_free_pages_back_to_the_kernel() -> None:
    """Blocks below the mmap threshold freed between live ones stay resident
    (the heap's top is pinned); one trim releases them."""
    trim = malloc_trim()
    assert trim is not None, "this Debian's C library is glibc: malloc_trim must be found"
    blocks = [bytes(16 * 1024) for _ in range(4000)]  # 64 MB, each block from the heap
    kept = blocks[::8]
    del blocks
    heap = HeapTrim(MemoryStatsCollector(get_crawler()), trim, 30.0)
    before = resident_bytes()
    released = heap.trim_now()
    assert released > 20 * MB, (released / MB, before / MB)
    assert heap.stats.get_value("heap/trims") == 1
    assert heap.stats.get_value("heap/released_bytes") == released
    assert len(kept) == 500


def test_the_settings_switch_it_off_and_a_bad_interval_is_named() -> None:
    crawler = get_crawler(settings_dict={"HEAP_TRIM_ENABLED": True, "HEAP_TRIM_INTERVAL": 12})
    assert HeapTrim.from_crawler(crawler).interval == 12.0
    with pytest.raises(NotConfigured):
        HeapTrim.from_crawler(get_crawler(settings_dict={"HEAP_TRIM_ENABLED": False}))
    with pytest.raises(ValueError, match="HEAP_TRIM_INTERVAL"):
        HeapTrim.from_crawler(get_crawler(settings_dict={"HEAP_TRIM_ENABLED": True, "HEAP_TRIM_INTERVAL": 0}))


def test_a_crawl_trims_its_heap_while_it_runs(tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=4, pages=10, links=3)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "HEAP_TRIM_INTERVAL": 0.05, "DOWNLOAD_DELAY": 0.2})
    assert result.returncode == 0, result.log[-2000:]
    assert result.stats.get("heap/trims", 0) >= 1, sorted(result.stats)
