"""Scrapy's own scheduler, engine and crawl tests pass with our frontier as SCHEDULER.

The :data:`FILES` of Scrapy's test suite, from the sdist of
the installed Scrapy version (``make scrapy-tests`` puts them, with the pytest
plugins they need, in ``<venv>/scrapy-tests``) run in a pytest subprocess
with :mod:`tests.scrapy_suite_plugin`, which makes the frontier Scrapy's
default scheduler: once on the default store (SQLite, one process) and once
on Redis (the shared, multi-process frontier). Every test must pass or be
skipped, except the ones in ``DEVIATIONS``: behaviour we change on purpose,
each listed in docs/differences.md with its reason. A deviation that starts passing
fails here too, so the list (and the README) cannot go stale.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from collections.abc import Iterator
from pathlib import Path

import pytest

from testweb.redisserver import RedisServer

ROOT = Path(__file__).resolve().parents[1]
SUITE = Path(sys.prefix) / "scrapy-tests"
FILES = ("tests/test_scheduler_base.py", "tests/test_crawl.py", "tests/test_engine.py", "tests/test_engine_loop.py",
         "tests/test_engine_close_spider.py", "tests/test_closespider.py", "tests/test_signals.py",
         "tests/test_crawler.py", "tests/test_request_attribute_binding.py", "tests/test_spidermiddleware_depth.py")
# Hang guards, not pass criteria: a crawl whose reactor stopped would wait
# for ever (Scrapy's slowest test here takes about 3 s), and so would the
# interpreter's exit after it.
PER_TEST_TIMEOUT = 60
RUN_TIMEOUT = 1800
EXIT_GRACE = 30  # seconds from the junit report to the process's exit

_ORDER = ("the order in which requests are sent: the frontier hands out the next URL of the host whose "
          "politeness delay has passed, by priority (front queues), not in the order of Scrapy's "
          "LIFO/FIFO memory queues")
_COMMON = {
    "test_engine_loop::TestRequestSendOrder::test_default": _ORDER,
    "test_engine_loop::TestRequestSendOrder::test_lifo_start": _ORDER,
    "test_engine_loop::TestRequestSendOrder::test_shared_queues": _ORDER,
    "test_engine_close_spider::test_exception_scheduler": (
        "the test deletes a private attribute of Scrapy's scheduler (dqs) to make it fail: the frontier "
        "has no such attribute"),
}

#: Scrapy tests that fail on purpose with the frontier on each store,
#: "module::Class::test" to the reason (docs/differences.md says the same).
DEVIATIONS: dict[str, dict[str, str]] = {"sqlite": dict(_COMMON), "redis": dict(_COMMON)}


@dataclass
class SuiteRun:
    store: str
    returncode: int
    hung_at_exit: bool
    outcomes: dict[str, str] = field(repr=False)  # test id -> "passed", "failed" or "skipped"
    messages: dict[str, str] = field(repr=False)  # failed test id -> first line of its failure
    # "frontier" and "scrapy" (Scrapy's own scheduler) -> pytest node id -> built
    schedulers: dict[str, dict[str, int]] = field(repr=False)
    output: str = field(repr=False)


def _test_id(case: ET.Element) -> str:
    module, _, cls = case.get("classname", "").removeprefix("tests.").partition(".")
    return "::".join(part for part in (module, cls, case.get("name", "")) if part)


def _outcome(case: ET.Element) -> tuple[str, str]:
    for tag in ("failure", "error"):
        found = case.find(tag)
        if found is not None:
            return "failed", (found.get("message") or found.text or tag).splitlines()[0][:300]
    return ("skipped", "") if case.find("skipped") is not None else ("passed", "")


def _parse(junit: Path) -> tuple[dict[str, str], dict[str, str]]:
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test, (outcome, message) = _test_id(case), _outcome(case)
        if outcomes.get(test) == "failed":  # an error in teardown after a failure
            continue
        outcomes[test] = outcome
        if message:
            messages[test] = message
    return outcomes, messages


def _run(command: list[str], env: dict[str, str], out: Path) -> tuple[int, bool]:
    """Run Scrapy's suite; its exit code, and whether it hung after writing
    its report (a stopped reactor leaves Twisted's thread pool running, and
    the interpreter waits for those threads for ever): then it is killed."""
    junit, hung = out / "junit.xml", False
    with (out / "output.txt").open("w", encoding="utf-8") as output:
        proc = subprocess.Popen(command, cwd=SUITE, env=env, stdout=output, stderr=subprocess.STDOUT)
        waited_after_report = 0
        for _ in range(RUN_TIMEOUT):
            try:
                return proc.wait(timeout=1), hung
            except subprocess.TimeoutExpired:
                waited_after_report += junit.exists()
            if waited_after_report > EXIT_GRACE:
                hung = True
                break
        proc.kill()
        return proc.wait(), hung


def _store_settings(store: str, directory: Path) -> tuple[dict[str, object], RedisServer | None]:
    """Defaults beyond SCHEDULER for ``store``, and the server it needs."""
    if store == "sqlite":
        return {}, None
    server = RedisServer(directory / "redis")
    # one crawl after another on one prefix; a crawl a test broke off must
    # not leave its URLs to the next one
    return {"FRONTIER_BACKEND": "redis", "REDIS_URL": server.url, "SCHEDULER_FLUSH_ON_START": True}, server


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def suite_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    if not (SUITE / ".ready").exists():
        pytest.fail(f"Scrapy's tests are not in {SUITE}: run `make scrapy-tests` (make test does)")
    out = tmp_path_factory.mktemp(f"scrapy-suite-{request.param}")
    settings, server = _store_settings(request.param, out)
    env = dict(os.environ, SCRAPY_SUITE_SCHEDULERS=str(out / "schedulers.json"),
               SCRAPY_SUITE_SETTINGS=json.dumps(settings),
               PYTHONPATH=os.pathsep.join((str(SUITE / "deps"), str(ROOT / "tests"))))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "scrapy_suite_plugin",
               "-q", "-rfE", f"--timeout={PER_TEST_TIMEOUT}", f"--junitxml={out / 'junit.xml'}", *FILES]
    try:
        returncode, hung = _run(command, env, out)
    finally:
        if server is not None:
            server.stop()
    output = (out / "output.txt").read_text(encoding="utf-8", errors="replace")
    if not (out / "junit.xml").exists() or (returncode not in (0, 1) and not hung):
        pytest.fail(f"Scrapy's suite did not run (exit {returncode}):\n{output[-4000:]}")
    outcomes, messages = _parse(out / "junit.xml")
    report = out / "schedulers.json"
    schedulers = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    yield SuiteRun(request.param, returncode, hung, outcomes, messages, schedulers, output)


def test_scrapy_suite_ran_on_the_frontier(suite_run: SuiteRun) -> None:
    """The override took effect: Scrapy's crawl tests built our frontier and
    none fell back to Scrapy's scheduler."""
    assert any(test.startswith("test_crawl::") for test in suite_run.outcomes)
    assert any(test.startswith("test_scheduler_base::") for test in suite_run.outcomes)
    frontiers = suite_run.schedulers.get("frontier", {})
    assert frontiers.get("tests/test_crawl.py::TestCrawl::test_follow_all", 0) >= 1
    assert not suite_run.schedulers.get("scrapy"), suite_run.schedulers.get("scrapy")


def test_scrapy_crawl_and_scheduler_tests_pass_with_the_frontier(suite_run: SuiteRun) -> None:
    deviations = DEVIATIONS[suite_run.store]
    failed = sorted(test for test, outcome in suite_run.outcomes.items()
                    if outcome == "failed" and test not in deviations)
    report = "\n".join(f"{test}: {suite_run.messages.get(test, '')}" for test in failed)
    assert not failed, f"{len(failed)} of Scrapy's tests fail with the frontier on {suite_run.store}:\n{report}"


def test_documented_deviations_still_deviate(suite_run: SuiteRun) -> None:
    """Each listed deviation exists and still fails; one that passes now
    comes off the list and out of the README."""
    stale = {test: suite_run.outcomes.get(test, "not collected") for test in DEVIATIONS[suite_run.store]
             if suite_run.outcomes.get(test) != "failed"}
    assert not stale, f"listed as deviations but not failing: {stale}"


def test_scrapy_suite_process_exits(suite_run: SuiteRun) -> None:
    """No crawl leaves the reactor or its threads behind."""
    assert not suite_run.hung_at_exit, "Scrapy's suite hung at exit (a stopped reactor's threads)"
