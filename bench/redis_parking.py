"""Cost of parking held origins' URLs on the shared frontier (Redis).

    python -m bench.redis_parking --urls 2000 --runs 3

One host's back queue on a fresh ``redis-server`` (started here, loopback),
drained by :meth:`~extensions.backends.redis.leases.HostLeases.take` and
``finish``; microseconds per URL handed out, median of ``--runs``:

* ``no holds`` -- the everyday take (no held origin: nothing to compare);
* ``half held`` -- half the URLs belong to a held ``https://`` origin of the
  same host, queued first: the takes park them (behind the ``http://`` ones)
  while handing out the others;
* ``unpark`` -- then the hold ends: microseconds per parked URL put back.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from extensions.frontier.fingerprint import url_fingerprint
from extensions.backends.redis.leases import HostLeases
from extensions.frontier.store import Entry, Status
from extensions.backends.redis.store import RedisStore
from testweb.redisserver import RedisServer


def entries(urls: list[str]) -> list[Entry]:
    out = []
    for url in urls:
        fp, host = url_fingerprint(url)
        out.append(Entry(fp, url, host, 0))
    return out


def run(server_url: str, prefix: str, count: int, held: bool) -> tuple[float, float]:
    store = RedisStore(server_url, prefix)
    store.open()
    leases = HostLeases(store, "bench", 60.0, 1)
    live = [f"http://h.test/p{i}" for i in range(count // 2 if held else count)]
    dead = [f"https://h.test/s{i}" for i in range(count // 2)] if held else []
    for batch in (dead, live):
        for start in range(0, len(batch), 256):
            leases.enqueue("h.test", entries(batch[start:start + 256]))
    leases.acquire(leases.poll(1).due)
    origins = ["https://h.test"] if held else []
    handed, began = 0, time.perf_counter()
    while True:
        taken = leases.take("h.test", origins)
        if taken.state == "taken":
            leases.finish("h.test", taken.entry.fingerprint, Status.DONE, 1.0)
            handed += 1
        elif taken.state != "stale":
            break
    per_url = (time.perf_counter() - began) / handed * 1e6
    began = time.perf_counter()
    unparked, _ = leases.unpark("h.test")
    per_parked = (time.perf_counter() - began) / unparked * 1e6 if unparked else 0.0
    store.delete_crawl()
    store.close()
    return per_url, per_parked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        rows: dict[str, list[float]] = {"no holds": [], "half held": [], "unpark": []}
        for run_no in range(args.runs):
            rows["no holds"].append(run(server.url, f"bench{run_no}a", args.urls, False)[0])
            per_url, per_parked = run(server.url, f"bench{run_no}b", args.urls, True)
            rows["half held"].append(per_url)
            rows["unpark"].append(per_parked)
    print(f"{'variant':<12} {'us per URL (median of ' + str(args.runs) + ')':>28}")
    for name, values in rows.items():
        print(f"{name:<12} {statistics.median(values):>28.1f}")


if __name__ == "__main__":
    main()
