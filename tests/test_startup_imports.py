"""What a crawl imports at start: heavy packages only for the components
switched on (a crawl's start-up CPU is part of every page's cost)."""

from __future__ import annotations

import subprocess
import sys

from testweb.crawlrun import ROOT

LOADED = """
import sys
from scrapy.utils.misc import load_object
import crawler.spiders.web  # the spider and, through the add-on, every component
for path in ("extensions.report.extension.CrawlReport", "extensions.metrics.MetricsExporter",
             "extensions.frontier.scheduler.Frontier", "extensions.pipelines.links.LinkScheduler"):
    load_object(path)
print(" ".join(sorted(name for name in ("matplotlib",) if name in sys.modules)))
"""


def test_report_extension_does_not_import_matplotlib_until_it_draws() -> None:
    """REPORT_DIR unset: the report's module is loaded (it is in EXTENSIONS)
    but matplotlib, ~0.27 s of CPU, is imported only for the first drawing."""
    out = subprocess.run([sys.executable, "-c", LOADED], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == []
