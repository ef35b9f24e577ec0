"""One Scrapy add-on that switches on every webcrawler component: :mod:`extensions.defaults`
at ``addon`` priority, and our components where the project has not placed them (an order
of ``None`` disables one)."""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from extensions import defaults

#: Component dictionaries: setting name -> {class path: order}.
COMPONENTS: dict[str, dict[str, int | None]] = {
    "DOWNLOADER_MIDDLEWARES": {
        # the address policy before robots.txt (100): a refused URL fetches nothing
        "extensions.dns.middleware.AddressPolicyMiddleware": 50,
        # ours replaces Scrapy's robots.txt middleware, at its place (100)
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "extensions.robots.middleware.RobotsMiddleware": 100,
        # after RetryMiddleware (550): it sees every attempt's connection failure first
        "extensions.breaker.CircuitBreakerMiddleware": 560,
        # before RetryMiddleware in the response's path: a 429 or 503 spends no retry
        "extensions.pushback.PushbackMiddleware": 555,
        # Scrapy's meta-refresh redirects at its place (580), skipped where bytes cannot declare one
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
        "extensions.metarefresh.MetaRefreshMiddleware": 580,
        # after every header-setting middleware, before DownloaderStats (850) and
        # HttpCacheMiddleware (900), which must not answer or eat its 304
        "extensions.revisit.conditional.ConditionalGetMiddleware": 800,
    },
    # links: last, after every pipeline that judges the page
    "ITEM_PIPELINES": {
        "extensions.pipelines.contentseen.ContentSeenPipeline": 300,
        # after the content-seen verdicts: host yield (credit share, low-yield stop)
        "extensions.pipelines.hostyield.HostYieldPipeline": 400,
        # trap signals on the links, before AOPIC credits them
        "extensions.urls.traps.TrapFilter": 800,
        # a page's outlinks for the WARC metadata records (WARC_OUTLINKS)
        "extensions.output.outlinks.OutlinksAnnouncer": 850,
        "extensions.pipelines.links.LinkScheduler": 900,
        # after every other: internal item fields never reach a feed
        "extensions.pipelines.internal.InternalFields": 1000,
    },
    # 500: after Scrapy's built-in extensions (CoreStats sets finish_reason first)
    "EXTENSIONS": {
        "extensions.progress.ProgressReporter": 500,
        # Scrapy's per-page DEBUG records not built when LOG_LEVEL drops them
        "extensions.logfloor.LogLevelFloor": 500,
        # startup objects frozen, larger collector generations (GC_TUNING_ENABLED)
        "extensions.collector.CollectorTuning": 500,
        # free C heap memory back to the kernel every HEAP_TRIM_INTERVAL (glibc only)
        "extensions.heaptrim.HeapTrim": 500,
        "extensions.output.warc.WarcWriter": 500,
        # seeds pushed to Redis (FRONTIER_BACKEND = "redis" only)
        "extensions.backends.redis.seeds.RedisSeeds": 500,
        # Prometheus /metrics (METRICS_PORT; off by default)
        "extensions.metrics.MetricsExporter": 500,
        # REPORT_DIR set only: index.html and plots, refreshed during the crawl
        "extensions.report.extension.CrawlReport": 500,
    },
}


#: Ours -> the Scrapy component it replaces: a project that places Scrapy's
#: itself keeps its choice, and ours is not added.
REPLACEMENTS: dict[str, str] = {
    "extensions.metarefresh.MetaRefreshMiddleware": "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware",
}


def default_settings() -> dict[str, Any]:
    return {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}


class WebcrawlerAddon:
    """Applies :mod:`extensions.defaults` and registers our components."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in default_settings().items():
            settings.set(name, value, "addon")
        for setting, components in COMPONENTS.items():
            placed = placed_components(settings, setting)  # the project's own choices stand
            for path, order in components.items():
                if path not in REPLACEMENTS or load_object(REPLACEMENTS[path]) not in placed:
                    settings.setdefault_in_component_priority_dict(setting, load_object(path), order)
        check_links_in_items(settings)


def placed_components(settings: BaseSettings, setting: str) -> set[Any]:
    """The components the project placed in ``setting`` itself, None included."""
    return {load_object(key) if isinstance(key, str) else key for key in settings.getdict(setting)}


LINK_SCHEDULER = "extensions.pipelines.links.LinkScheduler"


def check_links_in_items(settings: BaseSettings) -> None:
    """ValueError when ``LINKS_IN_ITEMS`` and ``ITEM_PIPELINES`` disagree."""
    enabled = _enabled(settings, "ITEM_PIPELINES", load_object(LINK_SCHEDULER))
    in_items = settings.getbool("LINKS_IN_ITEMS", defaults.LINKS_IN_ITEMS)
    if in_items and not enabled:
        raise ValueError(
            f"LINKS_IN_ITEMS is True but {LINK_SCHEDULER} is not in ITEM_PIPELINES: the spider would put "
            "every page's links on its item and nothing would follow them. Set LINKS_IN_ITEMS = False "
            "(the spider then follows links itself) or enable the pipeline.")
    if enabled and not in_items:
        raise ValueError(
            f"LINKS_IN_ITEMS is False but {LINK_SCHEDULER} is in ITEM_PIPELINES: it would get no links "
            "to credit or schedule, and duplicates' links would be followed. Set LINKS_IN_ITEMS = True "
            "or disable the pipeline (order None).")


def _enabled(settings: BaseSettings, setting: str, component: type) -> bool:
    """Whether ``component`` (or a subclass) has an order in ``setting``."""
    for path, order in settings.getwithbase(setting).items():
        found = load_object(path)
        if order is not None and isinstance(found, type) and issubclass(found, component):
            return True
    return False
