"""Signals our components send each other through Scrapy's signal manager."""

from __future__ import annotations

#: The frontier gave ``host`` (its politeness key) a back queue: a fetch of it
#: is coming soon, the moment to resolve its name. Arguments: ``host``.
host_assigned = object()

#: An origin (``scheme://host[:port]``) cannot be crawled now (robots.txt
#: unreachable, a tripped breaker, a pushback): the frontier parks its URLs
#: for ``delay`` seconds. Arguments: ``origin``, ``delay``, ``reason``,
#: ``request`` (refused for it, if any: it goes back to its queue) and
#: ``wait_out`` (optional: the hold ends by itself, so an idle crawl waits).
origin_held = object()

#: An origin stays uncrawlable after its retries, or is not worth crawling
#: (``"low-yield"``): its URLs become ``deferred`` for this run (a resume
#: retries them first). Arguments: ``origin``, ``reason``.
origin_deferred = object()

#: URLs refused for good in this run (URL filter ``filter/<reason>``, trap
#: filter ``trap/<reason>``, address policy ``address/<category>``): the
#: frontier records each unknown one ``refused``. Arguments: ``refusals``, a
#: list of ``(url, reason)``, and ``request``, if it was already handed out.
urls_refused = object()

#: An origin's robots.txt was parsed: its ``Crawl-delay`` (seconds, clamped;
#: None: none) becomes its host's delay. A receiver may return the seconds
#: until the host may be fetched again, which the pages that waited for the
#: robots.txt wait out. Arguments: ``origin``, ``crawl_delay``.
robots_rules_parsed = object()

#: A handed-out request must not be fetched (``reason``: ``"robotstxt"``): the
#: frontier records it excluded and frees its host without a politeness gap.
#: Arguments: ``request``, ``reason``.
request_excluded = object()

#: A host keeps asking the crawler to slow down: from now on the frontier
#: waits at least ``delay`` seconds between its fetches (end to start).
#: Arguments: ``origin``, ``delay``.
politeness_widened = object()

#: A page's outlinks that passed the URL and trap filters, in document order
#: (the WARC writer records them). Arguments: ``url`` (final), ``links``,
#: ``via`` (the referrer, or None), ``depth``.
page_outlinks = object()
