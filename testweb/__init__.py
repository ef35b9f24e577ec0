"""A deterministic synthetic web for end-to-end tests, demos and benchmarks.

``start_testweb(WebConfig(...), workdir)`` runs the server as a subprocess on
a free loopback port; ``web.truth()`` says what a correct crawl fetches.
See :mod:`testweb.model` for what the web contains.
"""

from __future__ import annotations

from testweb.launch import TestWeb, start_testweb
from testweb.model import Link, Page, SiteModel, WebConfig, canonical_url
from testweb.server import Entry, read_access_log
from testweb.truth import Truth, compute_truth

__all__ = [
    "Entry", "Link", "Page", "SiteModel", "TestWeb", "Truth", "WebConfig",
    "canonical_url", "compute_truth", "read_access_log", "start_testweb",
]
