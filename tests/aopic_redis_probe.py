"""A shared frontier's AOPIC payments on a running reactor.

    python -m tests.aopic_redis_probe pause REDIS_URL PREFIX io_thread|inline PAUSE_MS
    python -m tests.aopic_redis_probe credits REDIS_URL PREFIX io_thread|inline
    python -m tests.aopic_redis_probe stored REDIS_URL PREFIX io_thread|inline

Opens a :class:`~tests.redis_helpers.DistributedFrontier` with
AOPIC (its ledger shared in Redis) on a running Twisted reactor and hands it
judged pages (:meth:`Frontier.page_done`), as the last item pipeline does.

* ``pause``: pauses every Redis client (``CLIENT PAUSE ms ALL``), hands over
  :data:`PAUSED_PAGES` pages and, every 10 ms, counts a tick; prints
  ``ticks_paused`` (with the payment on the reactor thread the first page
  blocks until the pause ends) and the pages answered after the pause;
* ``credits``: seeds, then :data:`PAGES` pages of a seeded random link graph
  (passing on :data:`SHARES` of their cash in turn) handed over all at once
  (answers come as they come); prints each page's history and its links'
  credits, the ledger's conservation sum and the reactor thread's round trips;
* ``stored``: a continuous crawl's 304: the page's stored outlinks come back.

Every loop is bounded; the JSON result is the last line of stdout.
"""

from __future__ import annotations

import json
import random
import sys
import threading
from typing import Any

import redis
from scrapy import Request
from twisted.internet import reactor, task
from twisted.internet.defer import Deferred, DeferredList

from extensions.aopic.ledger import AOPICLedger
from tests.redis_helpers import DistributedFrontier
from extensions.frontier.gauges import DictStats
from extensions.frontier.page import PageDone, PageVerdict
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.frontier.revisits import RevisitSchedule
from extensions.revisit.policy import RevisitPolicy
from extensions.backends.redis.store import RedisStore
from tests.aopic_helpers import ledger_totals

TICK = 0.01
MAX_TICKS = 3000
PAUSED_PAGES = 5
PAGES = 300  # pages of the credits graph
POOL = 400  # URLs its links are drawn from (many known: credits raise queued URLs)
SEEDS = 120
SHARES = (1.0, 0.5, 0.25)  # credit shares of the credits graph's pages, in turn


def url(n: int) -> str:
    return f"http://host{n % 37}.example/page{n}"


def graph(seed: int = 11) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    return [(url(rng.randrange(POOL)), [url(rng.randrange(POOL)) for _ in range(rng.randrange(0, 12))])
            for _ in range(PAGES)]


class Probe:
    def __init__(self, command: str, url_: str, prefix: str, mode: str, pause_ms: int) -> None:
        self.command, self.url, self.mode, self.pause_ms = command, url_, mode, pause_ms
        self.result: dict[str, Any] = {"worker": False, "error": None, "ticks_paused": 0}
        store = RedisStore(url_, prefix, persist=False)
        schedule = None
        if command == "stored":
            policy = RevisitPolicy(10.0, 5.0, 40.0, gone_after=2, schedule="adaptive")
            schedule = RevisitSchedule(store, policy, DictStats())
        self.frontier = DistributedFrontier(
            store, io_thread=mode == "io_thread", ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8),
            lease_ttl=60.0, poll_interval=0.01, looping_call=task.LoopingCall, call_later=reactor.callLater,
            revisit_schedule=schedule)
        self.pause_over = threading.Event()
        self.paused = False
        self.ticks = 0
        self.loop = task.LoopingCall(self.tick)

    # -- the reactor's side ---------------------------------------------------------
    def tick(self) -> None:
        self.ticks += 1
        if self.paused and not self.pause_over.is_set():
            self.result["ticks_paused"] += 1
        if self.ticks >= MAX_TICKS:
            self.result["error"] = f"gave up after {MAX_TICKS} ticks"
            self.finish()

    def finish(self) -> None:
        if self.loop.running:
            self.loop.stop()
        try:
            self.frontier.close("finished")
        finally:
            reactor.stop()

    def failed(self, failure: Any) -> None:
        self.result["error"] = repr(failure.value)
        self.finish()

    def begin(self) -> None:
        try:
            self.frontier.open(None)
            self.result["worker"] = self.frontier.dispatch.worker is not None
            self.loop.start(TICK)
            getattr(self, self.command)()
        except Exception as err:  # noqa: BLE001 - reported in the JSON
            self.result["error"] = repr(err)
            self.finish()

    def done(self, verdicts: list[PageVerdict]) -> Deferred[list[PageDone]]:
        """Every page handed over at once; their answers in order."""
        answers = [self.frontier.page_done(verdict) for verdict in verdicts]
        self.result["deferred"] = sum(isinstance(answer, Deferred) for answer in answers)
        found = DeferredList([answer if isinstance(answer, Deferred) else _fired(answer) for answer in answers],
                             fireOnOneErrback=True, consumeErrors=True)
        return found.addCallback(lambda pairs: [value for _, value in pairs])

    def reactor_round_trips(self) -> int:
        return int(self.frontier.dispatch.timing()["redis/reactor_round_trips"])

    # -- the commands -----------------------------------------------------------------
    def seed(self, urls: list[str]) -> None:
        for link in urls:
            self.frontier.enqueue_request(Request(link, meta={"is_start_request": True}))

    def pause(self) -> None:
        self.seed([url(n) for n in range(PAUSED_PAGES)])
        client = redis.Redis.from_url(self.url)
        client.execute_command("CLIENT", "PAUSE", self.pause_ms, "ALL")
        client.close()
        threading.Thread(target=self.wait_for_pause_end, daemon=True).start()
        self.paused = True
        verdicts = [PageVerdict(url(n), [url(100 + 3 * n + k) for k in range(3)]) for n in range(PAUSED_PAGES)]
        self.done(verdicts).addCallbacks(self.paused_answers, self.failed)

    def wait_for_pause_end(self) -> None:
        client = redis.Redis.from_url(self.url, socket_timeout=60)
        client.ping()  # answered when the pause ends
        client.close()
        self.pause_over.set()

    def paused_answers(self, answers: list[PageDone]) -> None:
        self.result["answered"] = len(answers)
        self.result["credited"] = sum(len(answer.credit) for answer in answers)
        self.result["ticks_before_answers"] = self.result["ticks_paused"]
        self.finish()

    def credits(self) -> None:
        pages = graph()
        self.seed(sorted({page for page, _ in pages})[:SEEDS])
        before = self.reactor_round_trips()
        self.result["pages"] = [[page, links] for page, links in pages]

        def answered(answers: list[PageDone]) -> None:
            self.result["reactor_round_trips"] = self.reactor_round_trips() - before
            self.result["done"] = [[answer.history, sorted([link, *credit] for link, credit in answer.credit.items())]
                                   for answer in answers]
            self.result["promoted"] = self.frontier.stats.get_value("aopic/promoted", 0)
            totals = ledger_totals(self.frontier.ledger)
            self.result["totals"] = [totals.conserved, totals.put_in, totals.rows, totals.history]
            self.finish()
        # pages of low-yield hosts pass on part of their cash (a tax of their own)
        self.done([PageVerdict(page, links, credit_share=SHARES[i % len(SHARES)])
                   for i, (page, links) in enumerate(pages)]).addCallbacks(answered, self.failed)

    def stored(self) -> None:
        links = [url(200 + k) for k in range(4)]
        self.seed([url(0)])

        def first(_: Any) -> None:
            for link in links:  # the link requests the pipeline makes: rows in the URL database
                self.frontier.enqueue_request(Request(link))
            self.done([PageVerdict(url(0), status=304, not_modified=True)]).addCallbacks(second, self.failed)

        def second(answers: list[PageDone]) -> None:
            self.result["links"] = answers[0].links
            self.result["expected"] = links
            self.finish()
        self.done([PageVerdict(url(0), links, content=1)]).addCallbacks(first, self.failed)


def _fired(value: Any) -> Deferred[Any]:
    found: Deferred[Any] = Deferred()
    found.callback(value)
    return found


def main(command: str, url_: str, prefix: str, mode: str, pause_ms: int = 0) -> None:
    probe = Probe(command, url_, prefix, mode, pause_ms)
    reactor.callWhenRunning(probe.begin)
    reactor.run()
    print(json.dumps(probe.result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 0)
