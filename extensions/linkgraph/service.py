"""Where a crawl's link graph lives (``LINKGRAPH_DIR``, else
``JOBDIR/linkgraph``, else the backend's place), rebuilt when the crawl has
recorded more pages than the build read, or when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.utils.job import job_dir

from extensions.backends import read_only_store, reading_backend
from extensions.linkgraph.build import build_link_graph, read_report
from extensions.linkgraph.graph import LinkGraph


def graph_directory(settings: Any) -> Path:
    """The directory of the crawl's graph files (see the module's docstring)."""
    if settings.get("LINKGRAPH_DIR"):
        return Path(settings.get("LINKGRAPH_DIR"))
    jobdir = job_dir(settings)
    if jobdir:
        return Path(jobdir) / "linkgraph"
    directory = reading_backend(settings).data_directory("linkgraph")
    if directory is not None:
        return directory
    raise ValueError("name the crawl: -s JOBDIR=DIR, or -s FRONTIER_BACKEND=redis with its REDIS_URL")


def up_to_date_graph(settings: Any, rebuild: bool = False) -> LinkGraph:
    """The crawl's graph, built first if missing, stale or ``rebuild``."""
    directory = graph_directory(settings)
    report = read_report(directory)
    store = read_only_store(settings)
    try:
        if rebuild or report is None or report.pages != store.links.sources():
            build_link_graph(store, directory)
    finally:
        store.close()
    return LinkGraph(directory)
