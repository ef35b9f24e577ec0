"""One Scrapy add-on that switches on every webcrawler component.

A project lists ``extensions.addon.WebcrawlerAddon`` in ``ADDONS`` and gets
the Mercator frontier, our middlewares, pipelines and extensions with the
defaults of :mod:`extensions.defaults`. The defaults are applied at Scrapy's
``addon`` priority, so ``settings.py`` (``project``) and ``-s`` (``cmdline``)
still win; components are added to Scrapy's component dictionaries only where
the user has not placed them already, so a user can disable one by setting
its order to ``None``.
"""

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
        # beside the downloader, after RetryMiddleware (550): it sees every
        # attempt's connection failure first
        "extensions.breaker.CircuitBreakerMiddleware": 560,
    },
    "SPIDER_MIDDLEWARES": {},
    # links: last, after every pipeline that judges the page
    "ITEM_PIPELINES": {
        "extensions.pipelines.contentseen.ContentSeenPipeline": 300,
        # trap signals on the links, before AOPIC credits them
        "extensions.urls.traps.TrapFilter": 800,
        "extensions.pipelines.links.LinkScheduler": 900,
    },
    # 500: after Scrapy's built-in extensions (CoreStats sets finish_reason first)
    "EXTENSIONS": {
        "extensions.progress.ProgressReporter": 500,
        "extensions.output.warc.WarcWriter": 500,
        # seeds pushed to Redis (FRONTIER_BACKEND = "redis" only)
        "extensions.seedqueue.RedisSeeds": 500,
    },
}


def default_settings() -> dict[str, Any]:
    """Every upper-case name of :mod:`extensions.defaults` with its value."""
    return {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}


class WebcrawlerAddon:
    """Applies :mod:`extensions.defaults` and registers our components."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in default_settings().items():
            settings.set(name, value, "addon")
        for setting, components in COMPONENTS.items():
            for path, order in components.items():
                settings.setdefault_in_component_priority_dict(
                    setting, load_object(path), order
                )
