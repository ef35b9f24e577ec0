"""The closing fence of a crawl's process registry (SCHEDULER_PERSIST off):
the last process out deletes the crawl's keys over many round trips; a
process joining meanwhile waits for the deletion to end, then joins a new
crawl whose records nobody deletes under it.

Two real processes (``tests/registry_fence_probe.py``) on a real
redis-server: the closing one pauses after its first batch of deleted keys
(a test hook of the registry) until the test lets it go, so the join lands
inside the deletion every time. Lines on the probes' stdout are the barriers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import redis

from extensions.backends.redis.contentseen import ContentKeys, pack64
from extensions.backends.redis.store import RedisStore
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import Status
from testweb.redisserver import RedisServer, unique_prefix

ROOT = Path(__file__).resolve().parent.parent


def _probe(log: Path, *args: str) -> subprocess.Popen[str]:
    with log.open("w") as stderr:
        return subprocess.Popen([sys.executable, "-m", "tests.registry_fence_probe", *args], cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)


def _expect(proc: subprocess.Popen[str], line: str, log: Path) -> None:
    """The probe's next line is ``line`` (a blocking read: '' if it ended)."""
    got = proc.stdout.readline()  # type: ignore[union-attr]
    if got != f"{line}\n":
        proc.kill()
        raise AssertionError((line, got, proc.wait(), log.read_text()[-3000:]))


def _go(proc: subprocess.Popen[str]) -> None:
    proc.stdin.write("go\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]


@pytest.mark.parametrize("first", ["frontier", "contentseen"])
def test_a_process_joining_while_the_last_one_deletes_the_crawl_waits_and_keeps_its_records(
        redis_server: RedisServer, tmp_path: Path, first: str) -> None:
    prefix = unique_prefix()
    closing_log, joining_log = tmp_path / "closing.log", tmp_path / "joining.log"
    closing = _probe(closing_log, "close", redis_server.url, prefix, first)
    joining = None
    try:
        _expect(closing, "ready", closing_log)
        _go(closing)
        _expect(closing, "deleting", closing_log)  # the crawl is half deleted, its deleter paused
        joining = _probe(joining_log, "join", redis_server.url, prefix)
        _expect(joining, "waiting", joining_log)  # refused while the deletion runs
        _go(closing)
        _expect(closing, "closed", closing_log)
        assert closing.wait() == 0, closing_log.read_text()[-3000:]
        _expect(joining, "joined", joining_log)
        _expect(joining, "filed", joining_log)

        # what the joiner wrote is all there, nothing of the closed crawl is
        observer = redis.Redis.from_url(redis_server.url)
        members = observer.zrange(f"{prefix}:processes", 0, -1)
        assert len(members) == 1, members
        assert observer.hget(f"{prefix}:meta", "schema") is not None
        content = ContentKeys(prefix)
        assert observer.hget(content.exact(2), pack64(2)) == b"http://b.test/"
        assert observer.hget(content.exact(1), pack64(1)) is None
        reader = RedisStore(redis_server.url, prefix)
        reader.open_read_only()
        assert reader.urls.status_of(url_fingerprint("http://b.test/")[0]) == Status.QUEUED
        assert reader.urls.status_of(url_fingerprint("http://a.test/")[0]) is None
        reader.close()

        _go(joining)  # the joiner is the last now: it deletes everything
        assert joining.wait() == 0, joining_log.read_text()[-3000:]
        assert sorted(observer.scan_iter(match=f"{prefix}:*")) == []
        observer.close()
    finally:
        for proc in (closing, joining):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
