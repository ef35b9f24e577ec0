"""Traps starve early: ``scrapy crawl web`` with defaults and no depth limit on
an independent trap web (:mod:`testweb.trapweb`: an endless calendar,
session ids in query, path and matrix form under unlisted names, a soft-404
archive of ever deeper unique paths), under a budget of 1.25x its
non-duplicate non-trap pages: at most 2% of fetches go to traps, and every
non-trap page is fetched."""

from __future__ import annotations

from pathlib import Path

from testweb.trapweb import TrapWebConfig
from testweb.traps_budget import measure


def test_traps_get_at_most_2_percent_and_every_non_trap_page_is_fetched(tmp_path: Path) -> None:
    outcome = measure(tmp_path, TrapWebConfig(sites=30, seed=1))
    assert outcome.returncode == 0
    assert outcome.trap_share <= 0.02, outcome.traps
    assert outcome.coverage == 1.0, outcome.missed[:10]
    stats = outcome.stats
    # each trap was met and cut by its own signal, not missed
    assert stats["urlfilter/session_params"] >= 3  # shop, portal, forum
    assert stats["urlfilter/filtered/calendar"] > 0
    assert stats["urlfilter/filtered/descent"] > 0
    assert outcome.traps["calendar"] > 0 and outcome.traps["deep paths"] > 0  # reachable traps
