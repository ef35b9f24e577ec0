"""Traps under a page budget, judged: ``scrapy crawl web`` on the trap web
(:mod:`testweb.trapweb`) with ``CLOSESPIDER_PAGECOUNT`` = 1.25 x its
non-duplicate non-trap pages and no depth limit, as a user would run it,
and what share of its fetches went to traps (:class:`Outcome`).

Used by ``tests/test_traps_budget.py`` (the bound) and ``bench/traps_budget.py``
(the table over several runs).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testweb.crawlrun import CrawlResult, run_web_crawl
from testweb.launch import TestWeb, start_testweb
from testweb.model import canonical_url
from testweb.trapweb import EVENTS_HOST, WIKI_HOST, TrapWeb, TrapWebConfig

BUDGET_FACTOR = 1.25


@dataclass
class Outcome:
    """What one budgeted crawl fetched, judged by the trap web's truth."""

    fetches: int
    traps: Counter[str] = field(default_factory=Counter)
    covered: int = 0
    pages: int = 0
    missed: list[str] = field(default_factory=list)
    returncode: int = 0
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def trap_share(self) -> float:
        return sum(self.traps.values()) / max(self.fetches, 1)

    @property
    def coverage(self) -> float:
        return self.covered / max(self.pages, 1)


def budget_of(model: TrapWeb) -> tuple[int, set[str]]:
    """(the page budget, the non-duplicate non-trap documents)."""
    documents = {url for url, duplicate in model.non_trap_pages().items() if not duplicate}
    return math.ceil(BUDGET_FACTOR * len(documents)), documents


def judge(web: TestWeb, documents: set[str]) -> Outcome:
    """Read the access log: every response is a fetch; trap kinds counted."""
    model: TrapWeb = web.model  # type: ignore[assignment]
    outcome = Outcome(fetches=0, pages=len(documents))
    fetched_documents: set[str] = set()
    for entry in web.entries():
        outcome.fetches += 1
        if entry.path == "/robots.txt":
            continue
        url = canonical_url(f"http://{entry.host}:{web.port}{entry.path}")
        document = model.document(url)
        if model.is_trap(url):
            outcome.traps["calendar" if entry.host == EVENTS_HOST else
                          "deep paths" if entry.host == WIKI_HOST else "other"] += 1
        elif document in fetched_documents and document != url:
            outcome.traps[f"session ids ({urlsplit(url).hostname})"] += 1
        fetched_documents.add(document)
    outcome.covered = len(documents & fetched_documents)
    outcome.missed = sorted(documents - fetched_documents)
    return outcome


def crawl(web: TestWeb, workdir: Path, budget: int, settings: dict[str, Any] | None = None,
          timeout: float = 600) -> CrawlResult:
    """One ``scrapy crawl web`` from the trap web's seeds under the budget,
    robots.txt handled by the defaults."""
    merged = {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 0, "CLOSESPIDER_PAGECOUNT": budget,
              **(settings or {})}
    return run_web_crawl(workdir, str(web.seeds_file), merged, timeout=timeout, robots_overrides=False)


def measure(workdir: Path, config: TrapWebConfig, settings: dict[str, Any] | None = None) -> Outcome:
    """Start the trap web, crawl it under the budget, judge the access log."""
    with start_testweb(config, workdir / "web") as web:
        budget, documents = budget_of(web.model)  # type: ignore[arg-type]
        result = crawl(web, workdir / "crawl", budget, settings)
        outcome = judge(web, documents)
    outcome.returncode = result.returncode
    outcome.stats = result.stats
    return outcome
