"""The delaying TCP proxy of bench.distributed's redis-remote variants."""

from __future__ import annotations

import os

import redis

from testweb.delayproxy import DelayProxy, round_trip
from testweb.redisserver import RedisServer


def test_every_round_trip_waits_both_ways_and_bytes_arrive_intact(redis_server: RedisServer) -> None:
    port = int(redis_server.url.rsplit(":", 1)[1].split("/")[0])
    with DelayProxy("127.0.0.1", port, 0.002) as proxy:
        url = f"redis://127.0.0.1:{proxy.port}/0"
        assert round_trip(url, pings=20) >= 0.004  # held 2 ms each way: never faster
        client = redis.Redis.from_url(url)
        value = os.urandom(1 << 20)  # larger than one read: many chunks, kept in order
        client.set("delayproxy:value", value)
        assert client.get("delayproxy:value") == value
        client.delete("delayproxy:value")
        client.close()
