"""``scrapy crawlstatus``: the status of a running or finished crawl of the test web.

The command runs as a subprocess from the project root, as a user runs it,
against a real crawl (``scrapy crawl web`` on the synthetic test web, with
``DOWNLOAD_DELAY`` so that it lasts); its counts are checked against the URL
database read with ``sqlite3`` directly, or against the Redis rows read with
redis-py directly. To compare exact counts during the crawl the test pauses
the crawl (SIGSTOP) around one reading, so nothing changes between the
database read and the command's; another reading runs while the crawl runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from extensions.frontier.store import Status
from testweb.crawlrun import ROOT, SCRAPY, kill_crawl, run_web_crawl, start_web_crawl
from testweb.waiting import CrawlActivity, ended, wait_for_exit, wait_until
from tests.test_linkgraph_record import WEB, crawl_settings

NAMES = [status.name.lower() for status in Status]


def crawlstatus(*args: str, **settings: Any) -> subprocess.CompletedProcess[str]:
    command = [SCRAPY, "crawlstatus", *args]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def status_json(**settings: Any) -> dict[str, Any]:
    run = crawlstatus("--json", "--hosts", "1000", "--errors", "100000", **settings)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def database_counts(job: Path) -> dict[str, int]:
    """URLs by status, read with sqlite3 directly (read-only)."""
    with sqlite3.connect(f"file:{job / 'frontier.sqlite3'}?mode=ro", uri=True) as db:
        rows = dict(db.execute("SELECT status, COUNT(*) FROM urls GROUP BY status").fetchall())
    return {name: rows.get(int(status), 0) for name, status in zip(NAMES, Status)}


def done_so_far(job: Path) -> int:
    """Pages marked done so far; 0 while the crawl has not yet created its tables."""
    if not (job / "frontier.sqlite3").exists():
        return 0
    try:
        return database_counts(job)["done"]
    except sqlite3.OperationalError:  # the file exists, its schema is still being written
        return 0


def database_hosts(job: Path) -> dict[str, tuple[int, int]]:
    """host -> (queued, done), read with sqlite3 directly."""
    with sqlite3.connect(f"file:{job / 'frontier.sqlite3'}?mode=ro", uri=True) as db:
        return {host: (queued, done) for host, queued, done in db.execute(
            "SELECT host, SUM(status=0), SUM(status=2) FROM urls GROUP BY host")}


def paused(proc: subprocess.Popen[bytes]) -> Any:
    """The crawl stopped (SIGSTOP) for the block, continued after it."""
    class Pause:
        def __enter__(self) -> None:
            os.killpg(proc.pid, signal.SIGSTOP)

        def __exit__(self, *exc: object) -> None:
            os.killpg(proc.pid, signal.SIGCONT)
    return Pause()


def slow_settings(web: Any, job: Path) -> dict[str, Any]:
    return crawl_settings(web, JOBDIR=job, DOWNLOAD_DELAY=0.4, RANDOMIZE_DOWNLOAD_DELAY=False)


def test_counts_equal_the_url_database_during_and_after_a_crawl(tmp_path: Path, start_web: Any) -> None:
    web = start_web(**WEB)
    job, workdir = tmp_path / "job", tmp_path / "crawl"
    proc = start_web_crawl(workdir, str(web.seeds_file), slow_settings(web, job))
    activity = CrawlActivity([workdir])
    try:
        wait_until(lambda: ended([proc]) or done_so_far(job) >= 10, "ten pages fetched", activity)
        assert proc.poll() is None, "the crawl ended before it could be read while running"
        running = status_json(JOBDIR=job)  # the crawl goes on meanwhile: counts only grow
        assert running["closed_cleanly"] is False and running["urls"]["done"] >= 10
        with paused(proc):
            before = database_counts(job)
            during = status_json(JOBDIR=job)
            assert database_counts(job) == before  # nothing moved: an exact comparison
        assert during["urls"] == before and during["total"] == sum(before.values())
        assert before["queued"] > 0, "read during the crawl, some URLs still wait"
        assert sum(host["queued"] for host in during["busiest"]) == before["queued"]
        assert during["rates"]["fetched"] >= before["done"] and during["rates"]["pages_per_second_overall"] > 0
        wait_for_exit([proc], [workdir])
    finally:
        kill_crawl(proc)
    assert proc.returncode == 0
    after = status_json(JOBDIR=job, PROGRESS_REPORT_FILE=workdir / "report.json")
    assert after["urls"] == database_counts(job) and after["closed_cleanly"] is True
    assert after["urls"]["done"] > during["urls"]["done"] and after["urls"]["queued"] == 0
    hosts = database_hosts(job)
    assert {host["host"]: (host["queued"], host["done"]) for host in after["busiest"]} == hosts
    with sqlite3.connect(f"file:{job / 'frontier.sqlite3'}?mode=ro", uri=True) as db:
        assert after["hosts"] == db.execute("SELECT COUNT(*) FROM hosts").fetchone()[0] > 5
    assert after["rates"]["report"]["finish_reason"] == "finished"
    refused = [event for event in after["refusals"] if event["status"] == "refused"]
    assert refused and all(event["reason"] for event in refused)  # the URL filter said why


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(JOBDIR, crawl workdir) of one finished crawl."""
    from testweb import WebConfig, start_testweb  # noqa: PLC0415
    tmp = tmp_path_factory.mktemp("crawlstatus")
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        result = run_web_crawl(tmp / "crawl", str(web.seeds_file), crawl_settings(web, JOBDIR=tmp / "job"))
        assert result.returncode == 0, result.log[-3000:]
    return tmp / "job", tmp / "crawl"


def test_the_screen_shows_every_section(finished: tuple[Path, Path]) -> None:
    job, workdir = finished
    run = crawlstatus("--hosts", "3", "--errors", "100000", JOBDIR=job, PROGRESS_REPORT_FILE=workdir / "report.json")
    assert run.returncode == 0, run.stderr
    screen = run.stdout
    for section in ("URLs:", "Rates:", "progress report:", "Busiest hosts (3):", "Held origins (0):",
                    "Deferred origins (0):", "Re-visits:", "Last errors (", "Last refusals ("):
        assert section in screen, section
    counts = database_counts(job)
    assert f"done {counts['done']}" in screen and f"refused {counts['refused']}" in screen
    busiest = max(database_hosts(job).items(), key=lambda item: item[1][1])[0]
    assert f"\n  {busiest} " in screen
    assert "filter/" in screen  # a refusal's reason


def test_refusals_are_outcomes_listed_apart_from_the_errors(finished: tuple[Path, Path]) -> None:
    """Was: "Last errors" listed the URL filter's refusals as errors."""
    job, _ = finished
    run = crawlstatus("--json", "--errors", "100000", JOBDIR=job)
    assert run.returncode == 0, run.stderr
    status, counts = json.loads(run.stdout), database_counts(job)
    assert counts["refused"] > 0 and counts["excluded"] > 0, counts  # the URL filter and robots.txt said no
    assert [event["status"] for event in status["errors"]] == ["failed"] * counts["failed"]
    assert Counter(event["status"] for event in status["refusals"]) == {
        "refused": counts["refused"], "excluded": counts["excluded"]}
    screen = crawlstatus("--errors", "100000", JOBDIR=job).stdout
    errors = screen[screen.index("Last errors ("):screen.index("Last refusals (")]
    assert "refused" not in errors and "excluded" not in errors and "filter/" not in errors
    assert "filter/" in screen[screen.index("Last refusals ("):]


def test_the_command_changes_nothing_in_the_store(finished: tuple[Path, Path]) -> None:
    job, _ = finished
    def snapshot() -> dict[str, str]:
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(job.iterdir())}
    before = snapshot()
    assert crawlstatus("--json", JOBDIR=job).returncode == 0
    assert crawlstatus(JOBDIR=job).returncode == 0
    assert snapshot() == before


def test_a_missing_jobdir_is_a_clear_error(tmp_path: Path) -> None:
    run = crawlstatus(JOBDIR=tmp_path / "nowhere")
    assert run.returncode != 0 and "no frontier database at" in run.stderr and "JOBDIR" in run.stderr
    assert not (tmp_path / "nowhere").exists()
    bare = crawlstatus()
    assert bare.returncode != 0 and "JOBDIR" in bare.stderr
    assert crawlstatus("--hosts", "-1", JOBDIR=tmp_path).returncode != 0


def redis_counts(url: str, prefix: str) -> dict[str, int]:
    """URLs by status, read with redis-py directly: the rows of URLs not
    finished (in the URL-row maps' buckets, see fpmap.py and rows.py) and the
    counts of finished ones, whose rows went (``#done``... in ``host_urls``)."""
    import redis  # noqa: PLC0415

    from extensions.backends.redis.fpmap import records  # noqa: PLC0415
    from extensions.backends.redis.rows import expand_row, row_status  # noqa: PLC0415
    client = redis.Redis.from_url(url)
    counts: Counter[int] = Counter()
    for key in client.scan_iter(match=f"{prefix}:{{*}}:urls:*", count=1000):  # the row maps' buckets
        bucket = client.get(key)  # before H: H is set before the first row that needs it
        host = client.hget(key.rsplit(b":", 2)[0], "H")
        counts.update(int(row_status(expand_row(row, host))) for _, row in records(bucket))
    finished = {"#done": Status.DONE, "#failed": Status.FAILED, "#excluded": Status.EXCLUDED,
                "#refused": Status.REFUSED}
    for key in client.scan_iter(match=f"{prefix}:{{*}}:host_urls", count=1000):
        for field, value in client.hgetall(key).items():
            if field.decode() in finished:
                counts[int(finished[field.decode()])] += int(value)
    return {name: counts.get(int(status), 0) for name, status in zip(NAMES, Status)}


def test_a_redis_crawl_is_read_through_the_redis_settings(tmp_path: Path, start_web: Any,
                                                          redis_server: Any) -> None:
    from testweb.redisserver import unique_prefix  # noqa: PLC0415

    web = start_web(**WEB)
    prefix = unique_prefix()
    redis = {"FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url, "FRONTIER_REDIS_PREFIX": prefix}
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file),
                           crawl_settings(web, SCHEDULER_PERSIST=True, **redis))
    assert result.returncode == 0, result.log[-3000:]
    status = status_json(**redis)
    assert status["urls"] == redis_counts(redis_server.url, prefix)
    assert status["urls"]["done"] > 50 and status["closed_cleanly"] is True
    assert sum(host["done"] for host in status["busiest"]) == status["urls"]["done"]
    assert status["held"] == [] and status["rates"]["fetched"] >= status["urls"]["done"]
    gone = crawlstatus(**{**redis, "FRONTIER_REDIS_PREFIX": unique_prefix()})
    assert gone.returncode != 0 and "no crawl at" in gone.stderr


def test_the_origins_a_single_process_crawl_holds_are_shown_with_their_reason(tmp_path: Path) -> None:
    """A single-process frontier keeps its holds in memory; at each
    checkpoint it writes them (reasons) where `crawlstatus` reads them.
    Was: "not kept in the store" for every SQLite crawl."""
    from extensions.status import collect  # noqa: PLC0415
    from extensions.backends import read_only_store  # noqa: PLC0415
    from extensions.backends.sqlite.store import SQLiteStore  # noqa: PLC0415
    from tests.test_frontier_support import make_frontier  # noqa: PLC0415

    frontier = make_frontier(SQLiteStore(tmp_path / "frontier.sqlite3"))
    frontier.origin_held("https://a.test", 60.0, "robots.txt answered 503")
    frontier.checkpoint()
    frontier.store.commit()
    reader = read_only_store({"JOBDIR": str(tmp_path)})
    try:
        held = collect(reader).held
    finally:
        reader.close()
    assert held is not None and [(note["origin"], note["reason"]) for note in held] == \
        [("https://a.test", "robots.txt answered 503")]
    frontier.close("finished")
