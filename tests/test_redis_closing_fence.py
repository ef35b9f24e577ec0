"""The closing fence of a crawl's process registry (SCHEDULER_PERSIST off):
the last process out deletes the crawl's keys over many round trips; a
process joining meanwhile waits for the deletion to end, then joins a new
crawl whose records nobody deletes under it.

Two real processes (``tests/registry_fence_probe.py``) on a real
redis-server: the closing one pauses after its first batch of deleted keys
(a test hook of the registry) until the test lets it go, so the join lands
inside the deletion every time. Lines on the probes' stdout are the barriers.
The registry's policy (the fence taken in the leave that finds no other
process, the bounded wait, the renewal per batch) on the registry itself,
with an injected clock and sleep, on a single server and a cluster.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.contentseen import RECORDS, ContentKeys, member_of
from extensions.backends.redis.keys import Keys
from extensions.backends.redis.registry import (
    CrawlClosingError,
    ProcessRegistry,
    closing_key,
)
from extensions.backends.redis.store import RedisStore
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import Status
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix

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
        assert observer.eval(RECORDS, 1, content.exact(2), member_of(2)) == [b"http://b.test/"]
        assert observer.eval(RECORDS, 1, content.exact(1), member_of(1)) == [None]
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


class Pacing:
    """An injected clock and sleep: sleeping moves the clock; ``then`` runs at a given sleep."""

    def __init__(self, then: dict[int, Callable[[], object]] | None = None) -> None:
        self.now, self.slept, self.then = 0.0, [], then or {}

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if len(self.slept) in self.then:
            self.then[len(self.slept)]()


def _registry(url: str, prefix: str, owner: str, pacing: Pacing | None = None, **options: Any) -> ProcessRegistry:
    connection = RedisConnection(url).attach("the registry test")
    if pacing is not None:
        options.update(sleep=pacing.sleep, clock=pacing.clock)
    return ProcessRegistry(connection, Keys(prefix).processes, owner, **options)


def test_the_leave_that_finds_no_other_process_fences_the_crawl_and_entering_waits_for_it(
        redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    observer = redis.Redis.from_url(redis_server.url)
    fence = closing_key(Keys(prefix).processes)
    one, two = _registry(redis_server.url, prefix, "one"), _registry(redis_server.url, prefix, "two")
    one.enter(10.0)
    two.enter(10.0)
    assert one.leave(10.0, fence=True) == 1  # "two" is alive: no fence
    assert observer.get(fence) is None
    assert two.leave(10.0, fence=True) == 0  # the last one: fenced for it
    assert observer.get(fence) == b"two"
    assert 0 < observer.pttl(fence) <= 30_000
    assert one.leave(None, fence=True) == 1  # another's fence counts as a process: not two deleters
    assert observer.get(fence) == b"two"

    # a process entering meanwhile waits, doubling its pauses, and then gives up with a clear error
    pacing = Pacing()
    three = _registry(redis_server.url, prefix, "three", pacing, wait=10.0)
    with pytest.raises(CrawlClosingError, match=r"still being deleted by its last process two after 10 s"):
        three.enter(10.0)
    assert pacing.slept[:6] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0] and set(pacing.slept[6:-1]) == {1.0}
    assert sum(pacing.slept) == pytest.approx(10.0)
    assert observer.zscore(Keys(prefix).processes, "three") is None  # not a member: nothing written

    # the fence lifted while it waits: it joins (the crawl anew) at its next try
    pacing = Pacing(then={3: two.unfence})
    four = _registry(redis_server.url, prefix, "four", pacing)
    four.enter(10.0)
    assert len(pacing.slept) == 3 and observer.get(fence) is None
    assert observer.zscore(Keys(prefix).processes, "four") is not None
    assert not two.unfence()  # lifted already: nothing changes
    observer.close()


def test_the_deleter_renews_its_fence_with_every_batch_and_a_killed_ones_fence_expires(
        redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    observer = redis.Redis.from_url(redis_server.url)
    fence = closing_key(Keys(prefix).processes)
    for i in range(10):
        observer.set(f"{prefix}:{{t{i}}}:urls", "x")
    deleter = _registry(redis_server.url, prefix, "deleter")
    deleter.enter()
    assert deleter.leave(None, fence=True) == 0
    observer.pexpire(fence, 1000)
    ttls: list[int] = []

    def batch(deleted: int) -> None:
        ttls.append(observer.pttl(fence))
        observer.pexpire(fence, 1000)

    deleter.deleted_batch = batch
    assert deleter.delete(Keys(prefix).all_patterns, Keys(prefix).singles, batch=3) == 10
    assert len(ttls) == 4 and all(ttl > 1000 for ttl in ttls), ttls  # renewed to 30 s each time
    assert list(observer.scan_iter(match=f"{prefix}:*")) == [] and observer.get(fence) == b"deleter"

    # killed while deleting (its fence never lifted): the fence expires, a joiner gets in
    observer.pexpire(fence, 1)
    joiner = _registry(redis_server.url, prefix, "joiner", Pacing())
    joiner.enter()
    assert observer.get(fence) is None and observer.zscore(Keys(prefix).processes, "joiner") is not None
    observer.close()


def test_the_fence_shares_the_registrys_cluster_slot(redis_cluster: RedisClusterServers) -> None:
    """One script reads the registry and the fence: same slot, on a cluster too."""
    prefix = unique_prefix()
    observer = RedisCluster.from_url(redis_cluster.url)
    processes = Keys(prefix).processes
    assert observer.keyslot(processes) == observer.keyslot(closing_key(processes))
    one = _registry(redis_cluster.url, prefix, "one")
    one.enter(10.0)
    assert one.leave(10.0, fence=True) == 0
    assert observer.get(closing_key(processes)) == b"one"
    pacing = Pacing(then={2: one.unfence})
    two = _registry(redis_cluster.url, prefix, "two", pacing)
    two.enter(10.0)
    assert len(pacing.slept) == 2 and observer.zscore(processes, "two") is not None
    observer.close()


def test_the_fence_stands_until_the_deleting_processs_last_component_has_left(redis_server: RedisServer) -> None:
    """The frontier deletes its keys while the content-seen sets still run in
    the same process: no one joins until those are closed (and deleted) too,
    however the frontier's component leaves; the heartbeat renews the fence
    meanwhile; the process's last component lifts it, deleting or not."""
    prefix = unique_prefix()
    observer = redis.Redis.from_url(redis_server.url)
    fence = closing_key(Keys(prefix).processes)
    process = _registry(redis_server.url, prefix, "process")
    process.enter()  # the frontier's store
    process.join(10.0)  # the frontier's leases
    process.enter(60.0)  # the content-seen sets
    assert process.leave(10.0) == 0  # the leases leave
    assert process.leave(None, fence=True) == 0  # the store closes: fenced
    assert not process.unfence() and observer.get(fence) == b"process"  # the content-seen sets still run
    observer.pexpire(fence, 1000)
    process.heartbeat()
    assert observer.pttl(fence) > 1000
    assert process.leave(60.0) == 0  # they close, keeping their keys
    assert observer.get(fence) == b"process"
    assert process.unfence() and observer.get(fence) is None  # the fence goes with the process

    # content-seen first: its fence outlasts the leases' plain leave, up to the store's own
    process.enter(10.0)
    process.enter(60.0)
    assert process.leave(60.0, fence=True) == 0 and not process.unfence()
    assert process.leave(10.0) == 0 and observer.get(fence) == b"process"
    joiner = _registry(redis_server.url, prefix, "joiner", Pacing(), wait=1.0)
    with pytest.raises(CrawlClosingError):
        joiner.enter()
    assert process.leave(None, fence=True) == 0 and process.unfence() and observer.get(fence) is None
    observer.close()
