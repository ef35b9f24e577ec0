"""Where a crawl's link graph lives, and keeping it up to date.

The graph of a crawl with ``JOBDIR`` lives in ``JOBDIR/linkgraph``;
``LINKGRAPH_DIR`` names another place (a Redis crawl without a job
directory needs it, or gets ``.scrapy/linkgraph/<prefix>`` in the project).
A build is redone when the crawl has recorded more pages than the build
read, or when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.utils.job import job_dir
from scrapy.utils.project import data_path

from extensions.linkgraph.build import build_link_graph, read_report
from extensions.linkgraph.graph import LinkGraph
from extensions.store.backends import frontier_backend
from extensions.store.factory import read_only_store


def graph_directory(settings: Any) -> Path:
    """The directory of the crawl's graph files (see the module's docstring)."""
    if settings.get("LINKGRAPH_DIR"):
        return Path(settings.get("LINKGRAPH_DIR"))
    jobdir = job_dir(settings)
    if jobdir:
        return Path(jobdir) / "linkgraph"
    if frontier_backend(settings) == "redis":
        from extensions.store.redis_factory import redis_settings  # noqa: PLC0415 - imports redis

        return Path(data_path(f"linkgraph/{redis_settings(settings).prefix}", createdir=True))
    raise ValueError("name the crawl: -s JOBDIR=DIR, or -s FRONTIER_BACKEND=redis with its REDIS_URL")


def up_to_date_graph(settings: Any, rebuild: bool = False) -> LinkGraph:
    """The crawl's graph, built first if there is none, it is stale or
    ``rebuild``; the crawl's store is opened read-only."""
    directory = graph_directory(settings)
    report = read_report(directory)
    store = read_only_store(settings)
    try:
        if rebuild or report is None or report.pages != store.links.sources():
            build_link_graph(store, directory)
    finally:
        store.close()
    return LinkGraph(directory)
