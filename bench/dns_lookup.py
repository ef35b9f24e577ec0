"""DNS lookups per second: our CachingResolver versus Scrapy's CachingThreadedResolver.

    python -m bench.dns_lookup                  # 5 runs, 2000 cold names, 64 in flight
    python -m bench.dns_lookup --runs 3 --names 1000

Five paths, each in the same process and reactor (Twisted's asyncio reactor,
as a crawl runs it), the median of ``--runs``:

* ours, cached: ``getHostByName`` of names already in our cache (called in a
  loop; the Deferred fires at once).
* Scrapy, cached: the same for ``CachingThreadedResolver`` with the names put
  in ``scrapy.resolver.dnscache`` (the dict its cached path reads).
* ours, uncached: distinct names never seen (cold cache), each a real UDP
  query to a dnslib server on loopback (:mod:`testweb.dnsserver`, in its own
  process, so the server does not share our GIL), ``--window`` in flight.
* ours, hosts file: names from a ``DNS_HOSTS`` file, cache off.
* Scrapy, uncached: ``CachingThreadedResolver`` with its cache off,
  resolving ``localhost`` from /etc/hosts through ``getaddrinfo`` in the
  reactor's thread pool (10 threads, Scrapy's ``REACTOR_THREADPOOL_MAXSIZE``),
  ``--window`` in flight. It cannot resolve made-up names without a network,
  so this is its cheapest uncached path, not a DNS query.

Every phase is bounded by ``--names``/``--cached`` lookups and ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from scrapy.utils.reactor import install_reactor

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
ADDRESS = "192.0.2.1"
THREADPOOL_SIZE = 10  # Scrapy's REACTOR_THREADPOOL_MAXSIZE


def serve_dns(channel: Any) -> None:
    """Child process: a dnslib server answering every ``*.bench`` name.

    Answers "cpu" with its CPU seconds so far, "stop" with its query count.
    """
    from testweb.dnsserver import DnsServer  # noqa: PLC0415

    with DnsServer() as server:
        server.answer_suffix(".bench", ADDRESS, ttl=3600)
        channel.send(server.nameserver)
        while channel.recv() == "cpu":
            channel.send(time.process_time())
        channel.send(server.total())


class Phase(NamedTuple):
    rate: float  # lookups per second
    cpu_us: float  # this process's CPU microseconds per lookup (all threads)
    done: int
    wall: float


def measured(started_wall: float, started_cpu: float, done: int) -> Phase:
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    return Phase(done / wall, cpu / max(done, 1) * 1e6, done, wall)


def cached_rate(lookup: Callable[[str], Any], names: list[str], count: int, deadline: float) -> Phase:
    """Lookups of names the resolver already holds (each Deferred fires at once)."""
    answers: list[str] = []
    started, started_cpu, done = time.perf_counter(), time.process_time(), 0
    while done < count and time.perf_counter() < deadline:
        for name in names[: count - done]:
            lookup(name).addCallback(answers.append)
        done = len(answers)
    assert all(answer == ADDRESS for answer in answers[:100]), answers[:3]
    return measured(started, started_cpu, done)


async def windowed_rate(lookup: Callable[[str], Any], names: Iterator[str], window: int,
                        deadline: float) -> Phase:
    """Lookups with ``window`` of them in flight, until ``names`` or the time runs out."""
    loop = asyncio.get_running_loop()
    done = 0

    async def worker() -> None:
        nonlocal done
        for name in names:
            if time.perf_counter() > deadline:
                return
            await lookup(name).asFuture(loop)
            done += 1

    started, started_cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(window)))
    return measured(started, started_cpu, done)


def our_resolver(reactor: Any, nameserver: str, **settings: Any) -> Any:
    """Ours as Scrapy builds it, the address policy on (ADDRESS's TEST-NET allowed)."""
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.dns.resolver import CachingResolver  # noqa: PLC0415

    crawler = get_crawler(settings_dict={"DNS_NAMESERVERS": nameserver, "DNS_TIMEOUT": 10,
                                         "DNS_CACHE_SIZE": 1_000_000,
                                         "ALLOWED_ADDRESS_NETWORKS": f"{ADDRESS}/24", **settings})
    return CachingResolver.from_crawler(crawler, reactor)


async def one_run(reactor: Any, server: Any, run: int, args: argparse.Namespace) -> dict[str, Phase]:
    from scrapy.resolver import CachingThreadedResolver, dnscache  # noqa: PLC0415

    phases: dict[str, Phase] = {}
    names = [f"r{run}-n{i}.bench" for i in range(args.names)]
    ours = our_resolver(reactor, server.nameserver)
    server_cpu = server.cpu()
    phase = phases["ours uncached"] = await windowed_rate(
        ours.getHostByName, iter(names), args.window, time.perf_counter() + args.max_seconds)
    phases["server busy"] = Phase((server.cpu() - server_cpu) / phase.wall, 0.0, 0, 0.0)
    assert phase.done == len(ours.cache), (phase.done, len(ours.cache))
    phases["ours cached"] = cached_rate(ours.getHostByName, names, args.cached,
                                        time.perf_counter() + args.max_seconds)
    with tempfile.NamedTemporaryFile("w", suffix=".hosts") as hosts:
        hosts.write("".join(f"{ADDRESS} {name}\n" for name in names))
        hosts.flush()
        pinned = our_resolver(reactor, server.nameserver, DNS_HOSTS=hosts.name, DNS_CACHE_SIZE=0)
    phases["ours hosts file"] = cached_rate(pinned.getHostByName, names, args.cached,
                                            time.perf_counter() + args.max_seconds)

    uncached = CachingThreadedResolver(reactor, 0, 60.0)  # cache off
    localhost = ("localhost" for _ in range(args.names))
    phases["scrapy uncached"] = phases["scrapy hosts file"] = await windowed_rate(
        uncached.getHostByName, localhost, args.window, time.perf_counter() + args.max_seconds)

    threaded = CachingThreadedResolver(reactor, 1_000_000, 60.0)
    dnscache.clear()
    for name in names:
        dnscache[name] = ADDRESS
    phases["scrapy cached"] = cached_rate(threaded.getHostByName, names, args.cached,
                                          time.perf_counter() + args.max_seconds)
    return phases


def print_table(results: list[dict[str, Phase]], args: argparse.Namespace, queries: int) -> None:
    def median(key: str, field: str) -> float:
        return statistics.median(getattr(r[key], field) for r in results)

    print(f"\nDNS lookups, median of {len(results)} runs ({args.names} cold names, "
          f"{args.cached} cached lookups, {args.window} uncached in flight)")
    print(f"{'path':<12} {'ours/s':>10} {'Scrapy/s':>10} {'ratio':>7}   "
          f"{'ours CPU us':>11} {'Scrapy CPU us':>13}")
    for path in ("cached", "uncached", "hosts file"):
        ours, scrapy = median(f"ours {path}", "rate"), median(f"scrapy {path}", "rate")
        print(f"{path:<12} {ours:>10,.0f} {scrapy:>10,.0f} {ours / scrapy:>6.2f}x   "
              f"{median(f'ours {path}', 'cpu_us'):>11.1f} {median(f'scrapy {path}', 'cpu_us'):>13.1f}")
    print("cached:     ours from its LRU; Scrapy's CachingThreadedResolver from scrapy.resolver.dnscache")
    print("uncached:   ours = a UDP query per distinct name to a dnslib server on loopback (another "
          "process);\n            Scrapy = getaddrinfo('localhost') from /etc/hosts in its 10-thread "
          "pool, cache off (it\n            cannot resolve made-up names without a network)")
    print("hosts file: ours = DNS_HOSTS entries, cache off; Scrapy = the same getaddrinfo row as above")
    print("CPU us:   this process's CPU time per lookup, all threads (the DNS server's not included)")
    print(f"dnslib server CPU busy during ours uncached: {median('server busy', 'rate'):.0%} "
          f"of the time; it answered {queries} queries ({len(results)} runs x {args.names} "
          "names: one per name)")


class ServerChannel:
    def __init__(self, pipe: Any, nameserver: str):
        self.pipe, self.nameserver = pipe, nameserver

    def cpu(self) -> float:
        self.pipe.send("cpu")
        return float(self.pipe.recv())


async def main_async(reactor: Any, server: ServerChannel, args: argparse.Namespace
                     ) -> list[dict[str, Phase]]:
    return [await one_run(reactor, server, run, args) for run in range(args.runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--names", type=int, default=2000, help="distinct cold names per run")
    parser.add_argument("--cached", type=int, default=200_000, help="cached lookups per run")
    parser.add_argument("--window", type=int, default=64, help="uncached lookups in flight")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="bound of each phase")
    args = parser.parse_args(argv)

    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=serve_dns, args=(child,), daemon=True)
    process.start()
    server = ServerChannel(parent, parent.recv())
    install_reactor(ASYNCIO_REACTOR)
    from twisted.internet import defer, reactor  # noqa: PLC0415

    reactor.suggestThreadPoolSize(THREADPOOL_SIZE)
    outcome: list[Any] = []

    def start() -> None:
        future = asyncio.ensure_future(main_async(reactor, server, args))
        d = defer.Deferred.fromFuture(future)
        d.addBoth(outcome.append)
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    reactor.run()
    parent.send("stop")
    queries = parent.recv()
    process.join(timeout=10)
    if not outcome or not isinstance(outcome[0], list):
        print("benchmark failed:", outcome[0] if outcome else "no result", file=sys.stderr)
        return 1
    print_table(outcome[0], args, queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
