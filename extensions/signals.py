"""Signals our components send each other through Scrapy's signal manager.

Connect with ``crawler.signals.connect(handler, signal=host_assigned)``.
"""

from __future__ import annotations

#: The frontier gave ``host`` (its politeness key: a host name, or an IP
#: address under ``CONCURRENT_REQUESTS_PER_IP``) a back queue, so a fetch of
#: it is coming soon: the moment to resolve its name (DNS prefetch).
#: Arguments: ``host``.
host_assigned = object()

#: An origin (``scheme://host[:port]``) cannot be crawled now: its robots.txt
#: is unreachable, or its circuit breaker tripped. The frontier parks its
#: URLs (never the host's other origins) until ``delay`` seconds from now;
#: a request of that origin refused meanwhile goes back to the frontier.
#: Arguments: ``origin``, ``delay``, ``reason``, and ``request``: the request
#: being refused for it, if any (it goes back to its queue, never failed).
origin_held = object()

#: An origin stays uncrawlable after its bounded retries: its URLs become
#: ``deferred`` in the URL database with ``reason`` and are not fetched again
#: in this run (a resumed crawl retries them first).
#: Arguments: ``origin``, ``reason``.
origin_deferred = object()

#: URLs that will not be crawled, for good in this run: refused by the URL
#: filter (``filter/<reason>``; not ``depth``, which depends on the path that
#: found the URL), the trap filter (``trap/<reason>``) or the address policy
#: (``address/<category>``). The frontier records each unknown one with
#: status ``refused``. Arguments: ``refusals``, a list of ``(url, reason)``,
#: and ``request``: the request refused, if it was already handed out.
urls_refused = object()
