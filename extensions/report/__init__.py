"""A crawl report a person opens in a browser (``REPORT_DIR``).

:mod:`.series` keeps samples of the crawl's stats over time and bounded
tallies (hosts, MIME types, depths); :mod:`.render` turns a snapshot of them
into ``index.html`` and PNG plots; :mod:`.extension` is the Scrapy extension
that samples every ``REPORT_INTERVAL`` seconds and at the end.
"""
