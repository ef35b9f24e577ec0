"""The content-seen pipeline's Redis round trips off the reactor thread
(extensions/backends/redis/contentseen_worker.py, ``CONTENTSEEN_REDIS_IO_THREAD``).

On real ``redis-server`` processes, with a real Twisted reactor
(``tests/contentseen_redis_probe.py``, a subprocess: a reactor runs once per
process): the reactor keeps running while Redis is paused (``CLIENT PAUSE``;
the control, with the round trips on the reactor thread, stops); the
verdicts on the test web's pages, all in flight at once, are those of the
synchronous path page for page, on a single Redis and on a cluster; two
processes judging the same content at the same moment agree on one first
URL; and a ``scrapy crawl web`` in Redis mode reports the test web's
duplicates with the round trips on the worker. Counts decide, not timings.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from extensions.contentseen.features import content_features
from testweb import WebConfig, start_testweb
from testweb.model import SiteModel
from testweb.neardup_truth import near_duplicate_truth
from testweb.redisserver import RedisServer, unique_prefix
from tests.reactor_probe import PAUSE_MS, ROOT, run_probe
from tests.test_distributed import crawl_settings, crawlers, wait_all

PAGES = 600  # of the test web, in crawl order
FAMILIES = 20  # of near-duplicates, four pages each


def probe(*args: str) -> dict[str, Any]:
    result = run_probe("contentseen_redis_probe", *args)
    assert result["error"] is None, result["error"]
    return result



def test_the_reactor_keeps_running_while_redis_is_paused(paused_server: RedisServer) -> None:
    result = probe("pause", paused_server.url, unique_prefix(), "io_thread", str(PAUSE_MS))
    assert result["worker"] is True
    # the LoopingCall went on ticking, each tick handing the pipeline a page
    assert result["ticks_paused"] >= 20, result
    # every page got its verdict once Redis answered: every copy is a duplicate
    assert result["answered"] == result["submitted"], result
    assert result["duplicates"] == result["submitted"] // 2, result


def test_control_waiting_on_the_reactor_thread_stops_it(paused_server: RedisServer) -> None:
    """The same probe without the worker: the first tick of the pause
    blocks until Redis answers (what the test above would see if the
    pipeline waited on the reactor thread)."""
    result = probe("pause", paused_server.url, unique_prefix(), "inline", str(PAUSE_MS))
    assert result["worker"] is False
    assert result["ticks_paused"] <= 2, result
    assert result["duplicates"] == result["submitted"] // 2, result


def _html(words: list[str]) -> str:
    return f"<html><body><p>{' '.join(words)}</p></body></html>"


def _simhash(words: list[str]) -> int:
    """The page's simhash as the pipeline sees it."""
    return content_features(_html(words).encode(), "utf-8", "text/html").near.simhash


def _edited(words: list[str], rng: random.Random) -> list[str]:
    """``words`` with one word changed, within simhash distance 1..3 of them."""
    original = _simhash(words)
    for position in rng.sample(range(len(words)), len(words)):
        edited = words[:position] + ["lantern"] + words[position + 1:]
        if 0 < (_simhash(edited) ^ original).bit_count() <= 3:
            return edited
    raise AssertionError("no one-word edit within distance 3")


def near_families(count: int, seed: int = 3) -> list[list[str]]:
    """Pages in families of four, one after the other: a text, a
    near-duplicate of it, an exact copy of that, a near-duplicate of the
    near-duplicate (the test web has few near-duplicates)."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(300)]
    pages = []
    for family in range(count):
        words = [rng.choice(vocabulary) for _ in range(200)]
        near = _edited(words, rng)
        pages += [[f"http://family{family}.test/{name}", _html(text)]
                  for name, text in (("text", words), ("near", near), ("copy", near), ("near2", _edited(near, rng)))]
    return pages


@pytest.fixture(scope="module")
def web_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test web's pages in crawl order (mirrors, copies, template
    families), then families of near-duplicates."""
    truth = near_duplicate_truth(SiteModel(WebConfig(), 8000))
    pages = [[url, page.body.decode("latin-1")] for url, page in list(truth.pages.items())[:PAGES]]
    pages += near_families(FAMILIES)
    path = tmp_path_factory.mktemp("pages") / "pages.json"
    path.write_text(json.dumps(pages))
    return path


@pytest.mark.parametrize("kind", ["single", "cluster"])
def test_verdicts_are_those_of_the_synchronous_path(kind: str, web_pages: Path,
                                                    request: pytest.FixtureRequest) -> None:
    """Every page handed over at once (their reads overtake the earlier
    pages' stores): fingerprints, duplicates, near-duplicates and groups
    are the synchronous path's, page for page; the reactor thread waited
    for no round trip of the pages."""
    server = request.getfixturevalue("redis_cluster" if kind == "cluster" else "redis_server")
    answered = probe("verdicts", server.url, unique_prefix(), "io_thread", str(web_pages))
    waited = probe("verdicts", server.url, unique_prefix(), "inline", str(web_pages))
    assert answered["worker"] is True and waited["worker"] is False
    assert answered["items"] == waited["items"]
    items = answered["items"]
    assert sum(bool(item["duplicate_of"]) for item in items) >= FAMILIES
    assert sum(bool(item["near_duplicate_of"]) for item in items) >= 2 * FAMILIES
    assert answered["reactor_round_trips"] == 0
    assert waited["reactor_round_trips"] >= len(items)
    # at most a page's look-up and its write-back apiece (under load several
    # pages share a pipeline, so fewer; on a quiet machine about one a page)
    assert 0 < answered["worker_round_trips"] <= 2 * len(items)


def _ready_probe(command: list[str], log: Path) -> subprocess.Popen[str]:
    """A ``verdicts`` probe with the start barrier, once it is a member of the crawl (has printed ``ready``)."""
    with log.open("w") as stderr:
        proc = subprocess.Popen([*command, "barrier"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]  # '' if the probe ended first
    assert line == "ready\n", (line, proc.wait(timeout=180), log.read_text()[-3000:])
    return proc


def test_two_processes_judging_the_same_content_at_once_agree_on_one_first(
        redis_server: RedisServer, web_pages: Path, tmp_path: Path) -> None:
    """Two probes, each with its own worker, hand over the same pages
    under their own URLs at the same moment: each content has exactly one
    first URL, in one of the two, and every other copy names it.

    The second probe starts only once the first is a member of the crawl,
    the start order a loaded machine gives at random: without the start
    barrier the first would judge every page and, the crawl's last process
    at its close, delete the sets before the second joined."""
    pages = json.loads(web_pages.read_text())
    prefix = unique_prefix()
    procs = []
    for name in ("one", "two"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps([[url.replace("://", f"://{name}.", 1), body] for url, body in pages]))
        procs.append(_ready_probe([sys.executable, "-m", "tests.contentseen_redis_probe", "verdicts",
                                   redis_server.url, prefix, "io_thread", str(path)], tmp_path / f"{name}.log"))
    for proc in procs:  # go: both are members, so neither one's close can be the crawl's last
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    results = []
    for name, proc in zip(("one", "two"), procs):
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    by_fingerprint: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        assert result["error"] is None, result["error"]
        for item in result["items"]:
            by_fingerprint.setdefault(item["fingerprint"], []).append(item)
    assert any(len(items) > 2 for items in by_fingerprint.values())  # copies inside each process too
    for fingerprint, items in by_fingerprint.items():
        firsts = {item["url"] for item in items if not item["duplicate_of"]}
        assert len(firsts) == 1, (fingerprint, [item["url"] for item in items])
        assert {item["duplicate_of"] for item in items if item["duplicate_of"]} == firsts, fingerprint


def test_a_crawl_in_redis_mode_reports_the_test_webs_duplicates(
        redis_server: RedisServer, tmp_path: Path) -> None:
    """One ``scrapy crawl web`` on the shared frontier with content-seen on:
    one first URL per content, the copies counted, the designed
    near-duplicates found, and the page look-ups sent by the worker."""
    with start_testweb(WebConfig(hosts=10, pages=8, links=4, seed=5), tmp_path / "web") as web:
        settings = crawl_settings(web, redis_server.url, unique_prefix(), CONTENTSEEN_ENABLED=True)
        with crawlers(tmp_path, str(web.seeds_file), settings, 1) as procs:
            [result] = wait_all(procs, tmp_path)
        truth = web.truth(depth_limit=settings["DEPTH_LIMIT"])
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["finish_reason"] == "finished"
    by_fingerprint: dict[str, list[dict[str, Any]]] = {}
    for item in result.items:
        if item.get("fingerprint"):
            by_fingerprint.setdefault(item["fingerprint"], []).append(item)
    copies = 0
    for fingerprint, items in by_fingerprint.items():
        firsts = {item["url"] for item in items if not item.get("duplicate_of")}
        assert len(firsts) == 1, (fingerprint, [item["url"] for item in items])
        copies += len(items) - 1
    assert copies > 0
    assert result.stats.get("contentseen/duplicates", 0) == copies
    items = {item["url"]: item for item in result.items}
    expected = {url for url in truth.near_duplicates if url in items}
    found = {url for url, item in items.items() if item.get("near_duplicate_of")}
    assert expected and len(expected & found) >= 0.95 * len(expected), sorted(expected - found)
    checked = result.stats["contentseen/checked"]
    assert result.stats["contentseen/redis/round_trips"] > 0
    # the reactor thread waited only at close (draining the worker), not per page
    assert result.stats["contentseen/redis/reactor_round_trips"] <= 3 < checked
