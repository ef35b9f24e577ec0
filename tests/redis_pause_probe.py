"""A shared frontier driven by a running reactor while Redis is paused.

    python -m tests.redis_pause_probe REDIS_URL PREFIX io_thread|inline PAUSE_MS

Opens a :class:`~tests.redis_helpers.DistributedFrontier` on a
running Twisted reactor, hands out one request (the worker path works),
then pauses every Redis client (``CLIENT PAUSE ms ALL``) and, every 10 ms,
enqueues a new URL and asks for the next request. A thread sends ``PING``
on a connection of its own, which Redis answers only when the pause ends.
Prints JSON: ``ticks_paused`` (ticks run while the pause lasted: with Redis
calls on the reactor thread the first tick blocks until the pause ends) and
``handed_out_after`` (requests handed out after the pause: the queued work
went through). Every loop is bounded.
"""

from __future__ import annotations

import json
import sys
import threading

import redis
from scrapy import Request
from twisted.internet import reactor, task

from tests.redis_helpers import DistributedFrontier
from extensions.backends.redis.store import RedisStore

TICK = 0.01
MAX_TICKS = 3000


def main(url: str, prefix: str, mode: str, pause_ms: int) -> None:
    result = {"ticks_paused": 0, "handed_out_before": 0, "handed_out_after": 0, "enqueued": 0,
              "worker": False, "error": None}
    pause_over = threading.Event()
    state = {"ticks": 0, "phase": "warm-up"}
    frontier = DistributedFrontier(RedisStore(url, prefix, persist=False), io_thread=mode == "io_thread",
                                   ledger=None, lease_ttl=60.0, poll_interval=0.01,
                                   looping_call=task.LoopingCall, call_later=reactor.callLater)

    def wait_for_pause_end() -> None:
        client = redis.Redis.from_url(url, socket_timeout=60)
        client.ping()  # answered when the pause ends
        client.close()
        pause_over.set()

    def enqueue(n: int) -> None:
        frontier.enqueue_request(Request(f"http://host{n % 3}.example/page{n}"))
        result["enqueued"] += 1

    def tick() -> None:
        state["ticks"] += 1
        phase = state["phase"]
        if phase == "warm-up":
            request = frontier.next_request()
            if request is not None:
                result["handed_out_before"] += 1
                frontier.fetch_finished(request, 0.0)
                client = redis.Redis.from_url(url)
                client.execute_command("CLIENT", "PAUSE", pause_ms, "ALL")
                client.close()
                threading.Thread(target=wait_for_pause_end, daemon=True).start()
                state["phase"] = "paused"
        elif phase == "paused":
            if pause_over.is_set():
                state["phase"] = "after"
                return
            result["ticks_paused"] += 1
            enqueue(100 + state["ticks"])
            request = frontier.next_request()
            if request is not None:  # answered as the pause ended
                frontier.fetch_finished(request, 0.0)
        else:
            request = frontier.next_request()
            if request is not None:
                result["handed_out_after"] += 1
                frontier.fetch_finished(request, 0.0)
            if result["handed_out_after"] >= 2:
                finish()
                return
        if state["ticks"] >= MAX_TICKS:
            dispatch = frontier.dispatch
            result["error"] = (f"gave up after {MAX_TICKS} ticks in phase {phase}: held "
                               f"{ {host: (held.queued, held.inflight, held.taking) for host, held in dispatch.held.items()} }, "
                               f"{len(dispatch.arrived)} answered takes, "
                               f"polling {dispatch.polling}")
            finish()

    def finish() -> None:
        loop.stop()
        frontier.close("finished")
        reactor.stop()

    def begin() -> None:
        try:
            frontier.open(None)
            result["worker"] = frontier.dispatch.worker is not None
            for n in range(3):
                enqueue(n)
        except Exception as err:  # noqa: BLE001 - reported in the JSON
            result["error"] = repr(err)
            reactor.stop()
            return
        loop.start(TICK)

    loop = task.LoopingCall(tick)
    reactor.callWhenRunning(begin)
    reactor.run()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
