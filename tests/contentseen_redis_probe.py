"""The content-seen pipeline in Redis mode on a running Twisted reactor.

    python -m tests.contentseen_redis_probe verdicts REDIS_URL PREFIX io_thread|inline PAGES_JSON [barrier]
    python -m tests.contentseen_redis_probe pause REDIS_URL PREFIX io_thread|inline PAUSE_MS

A reactor runs once per process, hence a subprocess. The pipeline is opened
with the reactor running (``CONTENTSEEN_REDIS_IO_THREAD`` on for
``io_thread``, off for ``inline``), so in ``io_thread`` mode it answers
through its worker thread.

``verdicts``: every page of PAGES_JSON (a list of ``[url, html]``, the html as latin-1 text: any bytes) is handed
to ``process_item`` at once, so they are all in flight together; prints
JSON: each item's verdict fields, in the input order, and the round trips
the reactor thread waited for (``reactor_round_trips``) and those of the
worker (``worker_round_trips``). With ``barrier``, once the pipeline is open
(this process a member of the crawl) it prints ``ready`` and waits for a line
on stdin before handing over its pages: the caller's start barrier, so that
processes meant to judge at the same moment all are members of the crawl
before any of them can finish it (the last one to close deletes the keys).

``pause``: after a warm-up page, pauses every Redis client (``CLIENT PAUSE
ms ALL``) and, every 10 ms, hands the pipeline a new page; a thread sends
``PING`` on a connection of its own, answered when the pause ends. Prints
JSON: ``ticks_paused`` (ticks run while the pause lasted: when the pipeline
waits for Redis on the reactor thread, the first tick blocks until the pause
ends), ``submitted`` and ``answered`` (items returned with a verdict), and
``duplicates`` (pages that were copies of an earlier one, judged so). Every
loop is bounded.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

import redis  # noqa: E402
from scrapy import Spider  # noqa: E402
from scrapy.utils.defer import deferred_from_coro  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402
from twisted.internet import defer, reactor, task, threads  # noqa: E402

from crawler.items import PageItem  # noqa: E402
from extensions.contentseen.features import content_features  # noqa: E402
from extensions.pipelines.contentseen import ContentSeenPipeline  # noqa: E402

FIELDS = ("url", "fingerprint", "duplicate_of", "simhash", "near_duplicate_of", "content_group")
TICK = 0.01
MAX_TICKS = 3000


def pipeline_for(url: str, prefix: str, mode: str) -> ContentSeenPipeline:
    crawler = get_crawler(Spider, {"CONTENTSEEN_BACKEND": "redis", "REDIS_URL": url, "FRONTIER_REDIS_PREFIX": prefix,
                                   "CONTENTSEEN_FLUSH_INTERVAL": 0, "CONTENTSEEN_REDIS_IO_THREAD": mode == "io_thread"})
    crawler.engine = SimpleNamespace(scheduler=None)
    return ContentSeenPipeline.from_crawler(crawler)


def item_of(url: str, html: str) -> PageItem:
    return PageItem(url=url, status=200, content_type="text/html; charset=utf-8",
                    content_features=content_features(html.encode("latin-1"), "utf-8", "text/html"))


def judged(pipeline: ContentSeenPipeline, item: PageItem) -> defer.Deferred[Any]:
    """The item with its verdicts, whether process_item answered at once or later."""
    result = pipeline.process_item(item)
    return defer.succeed(result) if isinstance(result, PageItem) else deferred_from_coro(result)


def verdicts(url: str, prefix: str, mode: str, pages_file: str, barrier: bool = False) -> dict[str, Any]:
    pages = json.loads(Path(pages_file).read_text())
    result: dict[str, Any] = {"error": None}
    pipeline = pipeline_for(url, prefix, mode)

    @defer.inlineCallbacks
    def run() -> Any:
        try:
            pipeline.open_spider()
            if barrier:
                print("ready", flush=True)
                yield threads.deferToThread(sys.stdin.readline)  # the caller's go (or its end: EOF)
            connection = pipeline.sets.store.connection
            before = connection.reactor_round_trips
            items = yield defer.gatherResults([judged(pipeline, item_of(*page)) for page in pages], consumeErrors=True)
            result["items"] = [{name: item.get(name) for name in FIELDS} for item in items]
            result["reactor_round_trips"] = connection.reactor_round_trips - before
            worker = pipeline.off_reactor.worker if pipeline.off_reactor is not None else None
            result["worker_round_trips"] = worker.connection.round_trips if worker is not None else 0
            result["worker"] = worker is not None
            pipeline.close()
        except Exception as err:  # noqa: BLE001 - reported in the JSON
            result["error"] = repr(err)
        reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    return result


def pause(url: str, prefix: str, mode: str, pause_ms: int) -> dict[str, Any]:
    result: dict[str, Any] = {"ticks_paused": 0, "submitted": 0, "answered": 0, "duplicates": 0, "error": None}
    pipeline = pipeline_for(url, prefix, mode)
    pause_over = threading.Event()
    state: dict[str, Any] = {"ticks": 0, "phase": "warm-up", "waiting": []}

    def wait_for_pause_end() -> None:
        client = redis.Redis.from_url(url, socket_timeout=60)
        client.ping()  # answered when the pause ends
        client.close()
        pause_over.set()

    def answered(item: PageItem) -> None:
        result["answered"] += 1
        result["duplicates"] += bool(item.get("duplicate_of"))

    def submit(n: int) -> None:
        # every other page is a copy of the one before it (another URL)
        html = f"<html><body><p>page {n // 2} of the paused probe</p></body></html>"
        state["waiting"].append(judged(pipeline, item_of(f"http://h{n}.test/p{n}", html)).addCallback(answered))
        result["submitted"] += 1

    def tick() -> None:
        state["ticks"] += 1
        if state["phase"] == "warm-up":
            submit(0)
            submit(1)
            client = redis.Redis.from_url(url)
            client.execute_command("CLIENT", "PAUSE", pause_ms, "ALL")
            client.close()
            threading.Thread(target=wait_for_pause_end, daemon=True).start()
            state["phase"] = "paused"
        elif state["phase"] == "paused":
            if pause_over.is_set():
                state["phase"] = "after"
                return
            result["ticks_paused"] += 1
            submit(result["submitted"])
        elif result["answered"] >= result["submitted"] or state["ticks"] >= MAX_TICKS:
            finish()

    def finish() -> None:
        loop.stop()
        try:
            pipeline.close()
        except Exception as err:  # noqa: BLE001 - reported in the JSON
            result["error"] = repr(err)
        reactor.stop()

    def begin() -> None:
        try:
            pipeline.open_spider()
            result["worker"] = pipeline.off_reactor is not None
        except Exception as err:  # noqa: BLE001 - reported in the JSON
            result["error"] = repr(err)
            reactor.stop()
            return
        loop.start(TICK)

    loop = task.LoopingCall(tick)
    reactor.callWhenRunning(begin)
    reactor.run()
    return result


if __name__ == "__main__":
    kind, redis_url, key_prefix, how, argument = sys.argv[1:6]
    if kind == "verdicts":
        print(json.dumps(verdicts(redis_url, key_prefix, how, argument, sys.argv[6:] == ["barrier"])))
    else:
        print(json.dumps(pause(redis_url, key_prefix, how, int(argument))))
