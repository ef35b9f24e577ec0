"""pytest plugin: Scrapy's own tests with our frontier as ``SCHEDULER``.

Loaded with ``-p scrapy_suite_plugin`` by :mod:`tests.test_scrapy_suite` in a
pytest run whose working directory holds the tests of Scrapy's sdist, so
``tests`` there is Scrapy's package, not ours. It changes Scrapy's default
``SCHEDULER`` before any test builds a crawler: every crawl that does not pick
its own scheduler runs on the frontier with Scrapy's other defaults and no
add-on, what a user gets by setting only ``SCHEDULER``.

``SCRAPY_SUITE_SETTINGS`` (JSON) adds more defaults, for another store
(``{"FRONTIER_BACKEND": "redis", "REDIS_URL": ...}``). With
``SCRAPY_SUITE_SCHEDULERS`` naming a file, it writes there (JSON) how many
frontiers, and how many of Scrapy's own schedulers, each test built, so the
caller can check the override took effect.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import default_settings

FRONTIER = "extensions.frontier.scheduler.Frontier"

# Our project root goes last on sys.path: it provides ``extensions`` and must
# not shadow Scrapy's ``tests`` package with ours.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

default_settings.SCHEDULER = FRONTIER
for _name, _value in json.loads(os.environ.get("SCRAPY_SUITE_SETTINGS") or "{}").items():
    setattr(default_settings, _name, _value)

_built: dict[str, Counter[str]] = {"frontier": Counter(), "scrapy": Counter()}
_current = {"test": "<outside a test>"}


def _count_builds(kind: str, scheduler_cls: type) -> None:
    """Wrap ``from_crawler`` of ``scheduler_cls`` to count the instances each
    test builds."""
    build = scheduler_cls.from_crawler.__func__

    def from_crawler(cls: type, crawler: Any) -> Any:
        _built[kind][_current["test"]] += 1
        return build(cls, crawler)

    scheduler_cls.from_crawler = classmethod(from_crawler)


def _count_schedulers() -> None:
    """Fails the session at once if the frontier cannot be imported."""
    from scrapy.core.scheduler import Scheduler  # noqa: PLC0415

    from extensions.frontier.scheduler import Frontier  # noqa: PLC0415

    _count_builds("frontier", Frontier)
    _count_builds("scrapy", Scheduler)


_count_schedulers()


def pytest_report_header(config: pytest.Config) -> str:
    return f"SCHEDULER = {default_settings.SCHEDULER} (webcrawler's frontier)"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    _current["test"] = item.nodeid
    try:
        return (yield)
    finally:
        _current["test"] = "<outside a test>"


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("SCRAPY_SUITE_SCHEDULERS")
    if path:
        Path(path).write_text(json.dumps(_built, indent=1), encoding="utf-8")
