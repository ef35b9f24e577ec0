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
#: Arguments: ``origin``, ``delay``, ``reason``, ``request``: the request
#: being refused for it, if any (it goes back to its queue, never failed),
#: and ``wait_out`` (optional): the hold ends by itself (a pushback's
#: Retry-After or back-off), so a crawl with nothing else to do waits for it
#: instead of deferring the origin (``FRONTIER_IDLE_CLOSE``).
origin_held = object()

#: An origin stays uncrawlable after its bounded retries, or is not worth
#: crawling on (its host's yield of new content fell too low: ``"low-yield"``):
#: its URLs become ``deferred`` in the URL database with ``reason`` and are
#: not fetched again in this run (a resumed crawl retries them first).
#: Arguments: ``origin``, ``reason``.
origin_deferred = object()

#: URLs that will not be crawled, for good in this run: refused by the URL
#: filter (``filter/<reason>``; not ``depth``, which depends on the path that
#: found the URL), the trap filter (``trap/<reason>``) or the address policy
#: (``address/<category>``). The frontier records each unknown one with
#: status ``refused``. Arguments: ``refusals``, a list of ``(url, reason)``,
#: and ``request``: the request refused, if it was already handed out.
urls_refused = object()

#: An origin's robots.txt was fetched and parsed (not sent while it is
#: unreachable): its ``Crawl-delay`` for our product token (seconds, clamped
#: by ``ROBOTSTXT_MAX_CRAWL_DELAY``; None: none declared) becomes its host's
#: delay in the frontier. A receiver may return the seconds until the host
#: may be fetched again (the frontier does: the robots.txt fetch counts for
#: the host's politeness gap), and the robots.txt middleware lets the pages
#: that waited for that robots.txt wait the longest answer out.
#: Arguments: ``origin`` (``scheme://host[:port]``), ``crawl_delay``.
robots_rules_parsed = object()

#: A request handed out must not be fetched: ``reason`` says why (robots.txt
#: forbids it: ``"robotstxt"``). The frontier records the URL excluded and
#: frees its host at once, without a politeness gap, since nothing was
#: fetched. Arguments: ``request``, ``reason``.
request_excluded = object()

#: A host keeps asking the crawler to slow down (429 or 503 answers, see
#: :mod:`extensions.pushback`): for the rest of the crawl the frontier waits
#: at least ``delay`` seconds between the end of one fetch of the host and
#: the start of the next (a longer gap it already keeps stays).
#: Arguments: ``origin`` (``scheme://host[:port]``), ``delay``.
politeness_widened = object()

#: A page's outlinks are known: the links that passed the URL and trap
#: filters, in document order, as the frontier will get them. The WARC
#: writer records them in a ``metadata`` record (``WARC_OUTLINKS``).
#: Arguments: ``url`` (the page's final URL, the response's), ``links``,
#: ``via`` (the page's referrer, or None), ``depth``.
page_outlinks = object()
