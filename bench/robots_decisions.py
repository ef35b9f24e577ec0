"""robots.txt decisions with a warm cache: time per decision and memory per host.

Fills a cache with the robots.txt of ``--hosts`` origins (bodies cycle
through the synthetic web's variants and a 40-rule file typical of large
sites), then times ``--decisions`` allow/deny decisions over random URLs of
random cached hosts, exactly as each middleware makes them per request:

* ours: ``TwoGenerationCache.get(origin)`` (the middleware's cache) + expiry check + ``RobotsRules.allowed``;
* stock: Scrapy's ``RobotsTxtMiddleware`` path, ``dict[netloc]`` +
  ``ProtegoRobotParser.allowed(url, user_agent)``.

Memory per cached host is the traced allocation (tracemalloc) of building
the cache divided by the hosts. Medians of ``--runs``.

    python -m bench.robots_decisions --hosts 10000 --decisions 200000 --runs 5
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from scrapy.robotstxt import ProtegoRobotParser

from extensions.robots.rules import RobotsRules, decode_body, product_token
from extensions.urls.recent import TwoGenerationCache
from testweb.model import WebConfig, robots_page

USER_AGENT = "webcrawler/0.1 (+https://github.com/webcrawler/webcrawler)"
VARIANTS = ("private", "groups", "allow", "strict", "crawl-delay", "empty")
LARGE = "User-agent: *\n" + "".join(
    f"Disallow: /section{i}/private/\nAllow: /section{i}/private/public-*.html$\n" for i in range(20)
) + "\nUser-agent: webcrawler\nCrawl-delay: 1\nDisallow: /search\n"
PATHS = ("/", "/p/1.html", "/private/secret.html", "/private/ok.html", "/search?q=1",
         "/section3/private/public-a.html", "/section7/private/x.html", "/a/b/c/d.html")


def bodies() -> list[bytes]:
    config = WebConfig(hosts=100, pages=20)
    return [robots_page(variant, config).body for variant in VARIANTS] + [LARGE.encode()]


def origins(hosts: int) -> list[str]:
    return [f"http://h{i:05d}.test" for i in range(hosts)]


def build_ours(hosts: list[str], texts: list[bytes]) -> TwoGenerationCache:
    token = product_token(None, USER_AGENT)
    cache = TwoGenerationCache(len(hosts))
    for i, origin in enumerate(hosts):
        text = decode_body(texts[i % len(texts)], "text/plain")
        cache.add(origin, RobotsRules.parse(text, token, expires=float("inf")))
    return cache


def build_stock(hosts: list[str], texts: list[bytes]) -> dict[str, ProtegoRobotParser]:
    return {origin.split("://", 1)[1]: ProtegoRobotParser(texts[i % len(texts)], None)
            for i, origin in enumerate(hosts)}


def measure_memory(build: Callable[[], Any], hosts: int) -> float:
    """Bytes allocated per cached host while building the cache."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = build()
    # parse lazily-built state too (Protego matches groups on first use)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del cache
    return (after - before) / hosts


def time_ours(cache: TwoGenerationCache, urls: list[tuple[str, str]]) -> float:
    now = time.monotonic()
    allowed = 0
    started = time.perf_counter()
    for origin, url in urls:
        rules = cache.get(origin)
        if rules is not None and rules.expires > now and rules.allowed(url):
            allowed += 1
    return (time.perf_counter() - started) / len(urls)


def time_stock(parsers: dict[str, ProtegoRobotParser], urls: list[tuple[str, str]]) -> float:
    allowed = 0
    started = time.perf_counter()
    for netloc, url in urls:
        if parsers[netloc].allowed(url, USER_AGENT):
            allowed += 1
    return (time.perf_counter() - started) / len(urls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    hosts, texts = origins(args.hosts), bodies()
    rng = random.Random(1)
    picks = [(rng.choice(hosts), rng.choice(PATHS)) for _ in range(args.decisions)]
    ours_urls = [(origin, origin + path) for origin, path in picks]
    stock_urls = [(origin.split("://", 1)[1], origin + path) for origin, path in picks]

    results: dict[str, dict[str, list[float]]] = {
        "ours": {"us": [], "bytes": []}, "stock": {"us": [], "bytes": []}}
    for _ in range(args.runs):
        results["ours"]["bytes"].append(measure_memory(lambda: build_ours(hosts, texts), args.hosts))
        results["stock"]["bytes"].append(measure_memory(lambda: build_stock(hosts, texts), args.hosts))
        cache, parsers = build_ours(hosts, texts), build_stock(hosts, texts)
        time_ours(cache, ours_urls[:1000])  # warm Protego's per-agent group match
        time_stock(parsers, stock_urls[:1000])
        results["ours"]["us"].append(time_ours(cache, ours_urls) * 1e6)
        results["stock"]["us"].append(time_stock(parsers, stock_urls) * 1e6)
        del cache, parsers

    med = {name: {key: statistics.median(values) for key, values in metrics.items()}
           for name, metrics in results.items()}
    print(f"robots.txt decisions: {args.hosts} cached hosts, {args.decisions} decisions, "
          f"medians of {args.runs} runs")
    print(f"{'':28}{'ours':>10}{'stock':>10}{'ours/stock':>12}")
    print(f"{'us per decision':28}{med['ours']['us']:>10.2f}{med['stock']['us']:>10.2f}"
          f"{med['ours']['us'] / med['stock']['us']:>12.2f}")
    print(f"{'decisions per second':28}{1e6 / med['ours']['us']:>10,.0f}{1e6 / med['stock']['us']:>10,.0f}"
          f"{med['stock']['us'] / med['ours']['us']:>12.2f}")
    print(f"{'KiB per cached host':28}{med['ours']['bytes'] / 1024:>10.2f}"
          f"{med['stock']['bytes'] / 1024:>10.2f}{med['ours']['bytes'] / med['stock']['bytes']:>12.2f}")
    print("stock: Scrapy's RobotsTxtMiddleware path (dict + ProtegoRobotParser.allowed with the "
          "full User-Agent); ours: LRU get + expiry + product-token decision")


if __name__ == "__main__":
    main()
