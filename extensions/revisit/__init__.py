"""Continuous crawling: when a fetched URL is due again (pure code, no I/O).

:mod:`.estimate` holds Cho and Garcia-Molina's arithmetic (change rates,
intervals, the crawl's estimated freshness), :mod:`.policy` the next interval
after each visit, and :mod:`.conditional` the conditional GET of a
re-visit (the ``REVISIT_*`` settings are read in :mod:`extensions.frontier.config`).
"""
