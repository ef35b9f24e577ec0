"""testweb.waiting: waits bounded by counts of progress, never by the clock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testweb.crawlrun import CrawlHung, run_spider
from testweb.waiting import PERIODIC, CrawlActivity, NoProgress, all_ended, ended, wait_for_exit, wait_until


def test_returns_the_polls_it_took_once_the_condition_holds() -> None:
    answers = iter([False, False, True])
    assert wait_until(lambda: next(answers), "third answer", interval=0) == 3


def test_gives_up_after_patience_polls_without_progress() -> None:
    polls = []
    with pytest.raises(NoProgress, match="no green light: nothing moved in 5 polls"):
        wait_until(lambda: polls.append(1), "green light", lambda: 7, patience=5, interval=0)
    assert len(polls) == 6  # the first poll sets the baseline, five more saw no change


def test_progress_resets_the_patience_and_the_limit_still_ends_the_wait() -> None:
    counter = iter(range(1000))
    polls = []
    with pytest.raises(NoProgress, match="after 50 polls, though it kept moving"):
        wait_until(lambda: polls.append(1), "end", lambda: next(counter), patience=3, interval=0, limit=50)
    assert len(polls) == 50


def test_a_stall_between_movements_shorter_than_patience_is_waited_out() -> None:
    values = iter([0, 0, 0, 1, 1, 1, 2, 2, 2, 3])
    seen: list[int] = []

    def progress() -> int:
        seen.append(next(values))
        return seen[-1]

    assert wait_until(lambda: seen[-1:] == [3], "3", progress, patience=3, interval=0) == 11


def test_without_progress_it_is_a_plain_count_of_polls() -> None:
    with pytest.raises(NoProgress):
        wait_until(lambda: False, "never", patience=4, interval=0)


def test_crawl_activity_counts_complete_lines_but_not_the_periodic_progress_line(tmp_path: Path) -> None:
    log = tmp_path / "crawl.log"
    activity = CrawlActivity([tmp_path, tmp_path / "missing"])
    assert activity() == 0
    log.write_bytes(b"2024 [scrapy.core.engine] INFO: Spider opened\n")
    assert activity() == 1
    with open(log, "ab") as handle:
        handle.write(b"2024 [extensions.progress" + PERIODIC + b"12 pages\n")
    assert activity() == 1  # an idle crawl writes that line too
    with open(log, "ab") as handle:
        handle.write(b"a partial li")
    assert activity() == 1
    with open(log, "ab") as handle:
        handle.write(b"ne\n")
    (tmp_path / "items.jsonl").write_bytes(b'{"url": "a"}\n{"url": "b"}\n')
    assert activity() == 4


def test_crawl_activity_adds_what_else_moves(tmp_path: Path) -> None:
    assert CrawlActivity([tmp_path], also=lambda: 42)() == (0, 42)


def test_ended_and_all_ended_read_the_processes() -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    running = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert ended([running, done]) and not all_ended([running, done])
        assert not ended([running])
    finally:
        running.communicate(b"")
    assert all_ended([running, done])


def test_a_crawl_past_its_last_resort_timeout_is_reported_as_a_hang(tmp_path: Path) -> None:
    spider = tmp_path / "hang.py"
    spider.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    with pytest.raises(CrawlHung, match="did not end within 1 s") as caught:
        run_spider(tmp_path / "run", spider, timeout=1)
    assert "runspider" in str(caught.value)


def test_a_hung_process_ends_the_wait_once_it_stops_writing(tmp_path: Path) -> None:
    """A stand-in for a hung crawl (the fault a working crawl cannot be made
    to produce): it writes its log, then nothing, and never exits."""
    script = "import sys, time\nfor i in range(5):\n    print(i, flush=True)\ntime.sleep(600)\n"
    with open(tmp_path / "crawl.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=log)
    try:
        with pytest.raises(NoProgress, match="no end of the crawls: nothing moved in 20 polls"):
            wait_for_exit([proc], [tmp_path], patience=20, interval=0.05)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert (tmp_path / "crawl.log").read_text().split() == ["0", "1", "2", "3", "4"]


def test_processes_that_end_end_the_wait(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", "print('done')"], stdout=subprocess.DEVNULL)
             for _ in range(2)]
    wait_for_exit(procs, [tmp_path], patience=1000, interval=0.01)
    assert [proc.returncode for proc in procs] == [0, 0]
