"""What a crawl imports at start: heavy packages only for the components
switched on (a crawl's start-up CPU is part of every page's cost).

The default crawl (SQLite frontier, no metrics, no report) loads every
component Scrapy would load, and every ``scrapy`` command module, without
importing ``redis`` (~90 ms of CPU), ``prometheus_client`` (~47 ms) or
matplotlib (~0.27 s); the Redis components still build on the Redis path."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from crawler.spiders.web import WebSpider
from extensions.frontier.config import frontier_kwargs
from extensions.pipelines.contentseen import ContentSeenPipeline
from extensions.frontier.store import FrontierStoreError
from extensions.backends import read_only_store
from testweb.crawlrun import ROOT
from testweb.redisserver import RedisServer, unique_prefix

HEAVY = ("matplotlib", "prometheus_client", "redis")

#: Loads a crawl's components as Scrapy does (the add-on applied, then every
#: component path of the crawler's settings, the scheduler and every command
#: module), in a fresh interpreter; prints what was loaded and what of HEAVY.
LOADED = """
import json, sys
from scrapy.cmdline import _get_commands_dict
from scrapy.crawler import Crawler
from scrapy.utils.misc import load_object
from scrapy.utils.project import get_project_settings
from crawler.spiders.web import WebSpider

settings = get_project_settings()
settings.setdict(json.loads(sys.argv[1]), priority="cmdline")
commands = _get_commands_dict(settings, inproject=True)  # `scrapy` imports them all, for every command
crawler = Crawler(WebSpider, settings)
crawler.addons.load_settings(crawler.settings)
paths = [path for key in ("EXTENSIONS", "DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "ITEM_PIPELINES")
         for path, order in crawler.settings.getwithbase(key).items() if order is not None]
names = []
for path in [*paths, crawler.settings["SCHEDULER"]]:
    component = load_object(path)  # the add-on gives classes, Scrapy's defaults paths
    names.append(f"{component.__module__}.{component.__qualname__}")
print(json.dumps({"commands": sorted(commands), "components": names,
                  "heavy": sorted(name for name in json.loads(sys.argv[2]) if name in sys.modules)}))
"""


def loaded(settings: dict[str, Any]) -> dict[str, Any]:
    """What LOADED reports for a crawl with ``settings``."""
    out = subprocess.run([sys.executable, "-c", LOADED, json.dumps(settings), json.dumps(HEAVY)],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_sqlite_crawl_loads_its_components_without_redis_prometheus_or_matplotlib() -> None:
    """FRONTIER_BACKEND sqlite, METRICS_PORT 0, REPORT_DIR unset (the
    defaults): the modules of the Redis seeds, the metrics exporter and the
    report are loaded (they are in EXTENSIONS) but import none of them."""
    report = loaded({})
    assert {"crawlstatus", "linkgraph"} <= set(report["commands"])
    for component in ("extensions.backends.redis.seeds.RedisSeeds", "extensions.metrics.MetricsExporter",
                      "extensions.report.extension.CrawlReport",
                      "extensions.pipelines.contentseen.ContentSeenPipeline"):
        assert component in report["components"]
    assert report["heavy"] == []


def test_the_redis_path_still_builds_the_redis_components(redis_server: RedisServer) -> None:
    """FRONTIER_BACKEND redis: the frontier gets the Redis store and the
    shared dispatch, the content-seen sets their Redis store, and a kept
    crawl is looked for in Redis (the modules imported on these branches only)."""
    from extensions.backends.redis.contentseen import RedisContentStore  # noqa: PLC0415
    from extensions.backends.redis.dispatch import SharedDispatch  # noqa: PLC0415
    from extensions.backends.redis.store import RedisStore  # noqa: PLC0415

    crawler = get_crawler(WebSpider, {"FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
                                      "FRONTIER_REDIS_PREFIX": unique_prefix()})
    parts = frontier_kwargs(crawler)
    assert isinstance(parts["store"], RedisStore) and isinstance(parts["dispatch"], SharedDispatch)
    assert isinstance(ContentSeenPipeline.from_crawler(crawler).sets.store, RedisContentStore)
    with pytest.raises(FrontierStoreError, match="no crawl at redis://"):
        read_only_store(crawler.settings)
