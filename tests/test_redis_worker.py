"""The shared frontier's Redis round trips run off the reactor thread
(:mod:`extensions.backends.redis.worker`).

A real ``redis-server`` is paused (``CLIENT PAUSE ms ALL``) while a real
Twisted reactor drives a shared frontier (``tests/redis_pause_probe.py``, a
subprocess: a reactor runs once per process): every 10 ms a LoopingCall
enqueues a URL and asks for the next request. The probe counts the ticks
that ran while the pause lasted (until a ``PING`` on another connection is
answered). With the worker thread the reactor keeps ticking; with Redis
calls on the reactor thread (``io_thread`` off, the control) the first
tick blocks until Redis answers. Counts, not timings, decide.
"""

from __future__ import annotations

from typing import Any

from testweb.redisserver import RedisServer
from tests.reactor_probe import PAUSE_MS, run_probe


def probe(server: RedisServer, prefix: str, mode: str) -> dict[str, Any]:
    return run_probe("redis_pause_probe", server.url, prefix, mode, str(PAUSE_MS), timeout=120)



def test_the_reactor_keeps_running_while_redis_is_paused(paused_server: RedisServer) -> None:
    result = probe(paused_server, "worker", "io_thread")
    assert result["error"] is None, result["error"]
    assert result["worker"] is True
    # the LoopingCall went on ticking (enqueues and next_request calls did not wait for Redis)
    assert result["ticks_paused"] >= 20, result
    assert result["enqueued"] >= result["ticks_paused"]
    # and the work queued during the pause went through once Redis answered again
    assert result["handed_out_after"] >= 2, result


def test_control_redis_calls_on_the_reactor_thread_stop_it(paused_server: RedisServer) -> None:
    """The same probe with Redis calls on the reactor thread: the first
    tick of the pause blocks until Redis answers (what the test above
    would see if the worker thread were not used)."""
    result = probe(paused_server, "inline", "inline")
    assert result["error"] is None, result["error"]
    assert result["worker"] is False
    assert result["ticks_paused"] <= 2, result
    assert result["handed_out_after"] >= 2, result
