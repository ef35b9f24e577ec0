"""A crawler process's Redis side (the shared frontier and the content-seen
set on one connection, ``SCHEDULER_PERSIST`` off) for the closing-fence test.

    python -m tests.registry_fence_probe close REDIS_URL PREFIX frontier|contentseen
    python -m tests.registry_fence_probe join REDIS_URL PREFIX

``close``: opens, files ``http://a.test/`` and content fingerprint 1, prints
``ready`` and waits for a line on stdin; then closes the component named
first, then the other. After its first batch of deleted keys it prints
``deleting`` and waits for a line (the test's pause point: the crawl is
half deleted); prints ``closed`` at the end.

``join``: opens (printing ``waiting`` when the process registry logs that it
waits for the crawl's deletion), prints ``joined``, files ``http://b.test/``
and content fingerprint 2, prints ``filed`` and waits for a line, then closes.
Every wait is a blocking read of one line: the test's barrier.
"""

from __future__ import annotations

import logging
import sys

from scrapy import Request

from tests.redis_helpers import crawler_process


class _Announce(logging.Handler):
    """Prints ``waiting`` once, at the registry's first log record."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.said = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.said:
            self.said = True
            say("waiting")


def say(line: str) -> None:
    print(line, flush=True)


def barrier() -> None:
    sys.stdin.readline()


def close(url: str, prefix: str, first: str) -> None:
    frontier, seen = crawler_process(url, prefix)
    frontier.enqueue_request(Request("http://a.test/"))
    seen.add_or_get(1, "http://a.test/")
    paused: list[int] = []

    def pause(deleted: int) -> None:
        if not paused:
            paused.append(deleted)
            say("deleting")
            barrier()

    frontier.store.registry.deleted_batch = pause
    say("ready")
    barrier()
    if first == "frontier":
        frontier.close("finished")
        seen.close()
    else:
        seen.close()
        frontier.close("finished")
    say("closed")


def join(url: str, prefix: str) -> None:
    logger = logging.getLogger("extensions.backends.redis.registry")
    logger.setLevel(logging.INFO)
    logger.addHandler(_Announce())
    frontier, seen = crawler_process(url, prefix)
    say("joined")
    frontier.enqueue_request(Request("http://b.test/"))
    seen.add_or_get(2, "http://b.test/")
    frontier.store.checkpoint()
    say("filed")
    barrier()
    seen.close()
    frontier.close("finished")


if __name__ == "__main__":
    if sys.argv[1] == "close":
        close(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        join(sys.argv[2], sys.argv[3])
