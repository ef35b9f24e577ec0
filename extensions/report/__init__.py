"""A crawl report for a browser (``REPORT_DIR``): :mod:`.series` samples and
tallies, :mod:`.render` the HTML and plots, :mod:`.extension` the extension."""
