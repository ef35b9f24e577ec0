"""Distributed crawling benchmark: 1, 2 and 3 ``scrapy crawl web`` processes
sharing one Redis frontier, versus one process on the embedded store and
versus stock scrapy-redis (its scheduler and dupefilter under a plain
CrawlSpider, 1 and 3 processes), on the same synthetic web in the same run.

    python -m bench.distributed --hosts 200 --pages 20 --runs 3

Per variant, medians of ``--runs`` runs (alternating variants within a run):

* pages/s of the whole crawl (test web's access log, robots.txt excluded:
  pages served between the first request's start and the last response's
  end), and per process;
* Redis memory per known URL: ``used_memory`` after the crawl (keys kept,
  ``SCHEDULER_PERSIST``) less before, over the URLs Redis knows (our URL rows
  in every ``P:{T}:urls`` hash; scrapy-redis' dupefilter set);
* Redis commands per fetched page: ``total_commands_processed`` (every
  command, those run inside Lua scripts included) over pages; and, for ours,
  round trips per page (the process's one Redis connection, shared by the
  frontier and content-seen: ``redis/round_trips`` in each process's final
  stats) and milliseconds per page its reactor thread waited for Redis
  (``redis/reactor_wait_seconds``: time inside redis-py calls made on the
  reactor thread, which serves nothing else meanwhile) next to the wait in
  all threads (``redis/wait_seconds``);
* pages per CPU second of the crawler processes (user + system, summed) and
  redis-server's CPU milliseconds per page (``INFO cpu``): what sizes a crawl
  (processes, Redis masters).

Variants: ``embedded`` (ours, SQLite in JOBDIR), ``redis`` (ours, the shared
frontier), ``scrapy-redis`` (a plain CrawlSpider on Scrapy's defaults with
scrapy-redis' scheduler and dupefilter), ``spider+scrapy-redis`` (our spider,
middlewares and pipelines with scrapy-redis' scheduler and dupefilter instead
of our frontier: the same per-page work, so the difference is the scheduler).

``--checkout NAME=PATH`` also runs our variants (``embedded``, ``redis``,
``redis-remote``) with the webcrawler checkout at PATH (shown as
``redis@NAME``), alternating with this one: a before/after in one run.

``--scripts`` also prints, per variant of ours, redis-server's time by
command (SLOWLOG with a threshold of 0: every command's own execution time,
a Lua script's by name): calls per page, microseconds per call and per page.
It costs redis-server time of its own and memory (B/URL reads high).

Every variant starts on an emptied Redis (``FLUSHALL``). Scrapy-redis does
not limit requests per host across processes (Scrapy's per-process
``CONCURRENT_REQUESTS_PER_DOMAIN=8`` and no delay), ours holds one request per
host across all processes; both with ``CONCURRENT_REQUESTS`` per process.
Mind the core count (printed): processes beyond it share CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from bench.crawl_vs_scrapy import ROOT, SCRAPY, compile_bytecode, pages_and_seconds
from testweb import WebConfig, start_testweb
from testweb.delayproxy import DelayProxy, round_trip
from testweb.redisserver import RedisServer, set_config


@dataclass
class Run:
    name: str
    processes: int
    pages: int
    seconds: float
    bytes_per_url: float
    commands_per_page: float
    round_trips_per_page: float = float("nan")  # ours: the Redis stores' round trips, summed over processes
    reactor_ms_per_page: float = float("nan")  # ours: reactor thread waiting for Redis, summed over processes
    wait_ms_per_page: float = float("nan")  # ours: any thread waiting for Redis
    reactor_trips_per_page: float = float("nan")  # ours: those of the round trips made on the reactor thread
    cpu_seconds: float = float("nan")  # the crawler processes' CPU (user + system), summed
    redis_cpu_ms_per_page: float = float("nan")  # redis-server's CPU (INFO cpu) per page
    scripts: dict[str, tuple[float, float]] = field(default_factory=dict)  # --scripts: command -> calls, us per page

    @property
    def pages_per_cpu_second(self) -> float:
        return self.pages / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0


def ours_command(web, workdir: Path, args: argparse.Namespace, settings: dict[str, object]) -> list[str]:
    cmd = [SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}"]
    merged = {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": args.depth,
              "PROGRESS_REPORT_FILE": workdir / "report.json",
              "CONCURRENT_REQUESTS": args.concurrency, "LOG_LEVEL": "INFO",
              "ALLOW_PRIVATE_ADDRESSES": True, "ROBOTSTXT_UNREACHABLE_PERIOD": 0,
              # special.test's always-503 page: its pushback pauses (10 s, doubling) would be the tail
              "PUSHBACK_BACKOFF_DELAY": 0.2,
              "LOG_FILE": workdir / "crawl.log", **settings}
    for name, value in merged.items():
        cmd += ["-s", f"{name}={value}"]
    return cmd + [part for item in args.settings for part in ("-s", item)]


def scrapy_redis_command(web, workdir: Path, args: argparse.Namespace, url: str) -> list[str]:
    spider = workdir / "stock_spider.py"
    shutil.copy(ROOT / "bench" / "stock_spider.py", spider)
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        # kept at close: the first process to go idle must not delete the
        # queue under the others (and the dupefilter is measured afterwards)
        "SCHEDULER_PERSIST": True, "REDIS_URL": url,
        "TWISTED_DNS_RESOLVER": "testweb.hostsresolver.HostsFileResolver",
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": args.depth,
        "CONCURRENT_REQUESTS": args.concurrency, "LOG_LEVEL": "INFO",
        "LOG_FILE": workdir / "crawl.log",
    }
    cmd = [SCRAPY, "runspider", str(spider), "-a", f"seeds={web.seeds_file}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    return cmd


def run_processes(commands: list[tuple[list[str], Path]], env: dict[str, str], timeout: float,
                  root: Path = ROOT) -> None:
    """Start every command at once (ours in the checkout ``root``, the stock
    spider in its own directory), output in that directory; wait for all
    (bounded)."""
    procs = []
    for cmd, workdir in commands:
        out = open(workdir / "stdout.txt", "wb")
        cwd = workdir if cmd[1] == "runspider" else root
        procs.append((subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT), workdir))
    deadline = time.monotonic() + timeout
    try:
        for proc, cwd in procs:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            if proc.returncode != 0:
                tail = "".join(path.read_text(errors="replace")[-2000:] for path in
                               (cwd / "stdout.txt", cwd / "crawl.log") if path.exists())
                raise RuntimeError(f"crawl failed ({proc.returncode}) in {cwd}:\n{tail}")
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def known_urls(client: redis.Redis, ours: bool) -> int:
    if ours:  # URLs the crawl inserted as new (finished rows are trimmed from P:{T}:urls)
        return sum(int(client.get(key) or 0) for key in client.scan_iter(match="*:known", count=1000))
    return sum(client.scard(key) for key in client.scan_iter(match="*:dupefilter", count=1000))


def run_variant(name: str, processes: int, web, workdir: Path, server: RedisServer,
                args: argparse.Namespace, remote_url: str | None = None, roots: dict[str, Path] | None = None) -> Run:
    """One crawl of the variant; ``remote_url``: Redis behind the delaying
    proxy, for ``redis-remote``; a name ``variant@checkout`` runs ours from
    ``roots[checkout]``."""
    name, _, checkout = name.partition("@")
    root = (roots or {}).get(checkout, ROOT)
    client = redis.Redis.from_url(server.url)
    client.flushall()
    memory_before = client.info("memory")["used_memory"]
    commands_before = client.info("stats")["total_commands_processed"]
    redis_cpu_before = redis_cpu(client)
    if args.scripts:
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 2_000_000)
        client.slowlog_reset()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    commands = []
    for i in range(processes):
        cwd = workdir / f"p{i}"
        cwd.mkdir(parents=True)
        if name == "scrapy-redis":
            commands.append((scrapy_redis_command(web, cwd, args, server.url), cwd))
        elif name == "spider+scrapy-redis":
            commands.append((ours_command(web, cwd, args, {
                "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
                "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
                "SCHEDULER_PERSIST": True, "REDIS_URL": server.url}), cwd))
        elif name == "embedded":
            commands.append((ours_command(web, cwd, args, {"JOBDIR": cwd / "job"}), cwd))
        else:
            url = remote_url if name == "redis-remote" else server.url
            commands.append((ours_command(web, cwd, args, {
                "FRONTIER_BACKEND": "redis", "REDIS_URL": url, "SCHEDULER_PERSIST": True}), cwd))
    since = time.time()
    env = dict(os.environ, PYTHONPATH=str(ROOT)) if name == "scrapy-redis" else dict(os.environ)
    run_processes(commands, env, args.timeout, root)
    pages, seconds = pages_and_seconds(web.access_log, since)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = (children.ru_utime - children_before.ru_utime) + (children.ru_stime - children_before.ru_stime)
    redis_cpu_seconds = redis_cpu(client) - redis_cpu_before
    commands_used = client.info("stats")["total_commands_processed"] - commands_before - 4  # our 4 INFOs
    if args.scripts:
        script_times = slowlog_by_script(client, pages)
        client.config_set("slowlog-log-slower-than", 10_000)
    ours = name.startswith("redis")
    urls = known_urls(client, ours)
    memory = client.info("memory")["used_memory"] - memory_before
    client.close()
    per_page = (lambda value: value / pages if pages else float("nan"))
    run = Run(f"{name}@{checkout}" if checkout else name, processes, pages, seconds, memory / urls if urls else float("nan"), per_page(commands_used),
              cpu_seconds=cpu_seconds, redis_cpu_ms_per_page=per_page(1000 * redis_cpu_seconds))
    if args.scripts:
        run.scripts = script_times
    if ours:
        waits = [redis_waits(cwd) for _, cwd in commands]
        run.round_trips_per_page = per_page(sum(w[0] for w in waits))
        run.reactor_ms_per_page = per_page(1000 * sum(w[1] for w in waits))
        run.wait_ms_per_page = per_page(1000 * sum(w[2] for w in waits))
        run.reactor_trips_per_page = per_page(sum(w[3] for w in waits))
    return run


def slowlog_by_script(client: redis.Redis, pages: int) -> dict[str, tuple[float, float]]:
    """redis-server's time by command since the SLOWLOG was reset: name (a
    script's, from :data:`extensions.backends.redis.scripts.NAMES`, or the
    command's) -> (calls per page, microseconds per page)."""
    import importlib
    import pkgutil

    import extensions.backends.redis as package
    for module in pkgutil.iter_modules(package.__path__):  # each registers its scripts' names
        importlib.import_module(f"{package.__name__}.{module.name}")
    from extensions.backends.redis.scripts import NAMES

    totals: dict[str, list[float]] = {}
    for entry in client.execute_command("SLOWLOG", "GET", "-1"):
        arguments = [part.decode(errors="replace") if isinstance(part, bytes) else str(part) for part in entry[3]]
        command = arguments[0].upper()
        if command in ("EVALSHA", "EVALSHA_RO") and len(arguments) > 1:
            command = NAMES.get(arguments[1], arguments[1][:12])
        elif command in ("SLOWLOG", "INFO", "CONFIG"):
            continue
        total = totals.setdefault(command, [0, 0.0])
        total[0] += 1
        total[1] += int(entry[2])
    client.slowlog_reset()
    return {name: (calls / max(pages, 1), micros / max(pages, 1)) for name, (calls, micros) in totals.items()}


def print_scripts(runs: dict[tuple[str, int], list[Run]]) -> None:
    """--scripts: redis-server's time by command, per variant (over all its runs)."""
    for (name, count), found in runs.items():
        merged: dict[str, list[float]] = {}
        for run in found:
            for command, (calls, micros) in run.scripts.items():
                total = merged.setdefault(command, [0.0, 0.0])
                total[0] += calls / len(found)
                total[1] += micros / len(found)
        if not merged:
            continue
        print(f"\n{name} x{count}: redis-server time by command (SLOWLOG), per page, mean of {len(found)} runs")
        print(f"{'command':<24}{'calls/page':>11}{'us/call':>9}{'us/page':>9}{'share':>7}")
        whole = sum(micros for _, micros in merged.values()) or 1.0
        for command, (calls, micros) in sorted(merged.items(), key=lambda item: -item[1][1]):
            print(f"{command:<24}{calls:>11.2f}{micros / calls if calls else 0:>9.1f}{micros:>9.1f}{micros / whole:>7.1%}")
        print(f"{'total':<24}{sum(c for c, _ in merged.values()):>11.2f}{'':>9}{whole:>9.1f}")


def redis_cpu(client: redis.Redis) -> float:
    """CPU seconds redis-server has used (user + system, every thread)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def redis_waits(workdir: Path) -> tuple[int, float, float, int]:
    """One of our processes' Redis round trips, seconds its reactor thread
    waited for Redis, seconds any thread did and the round trips made on the
    reactor thread (its final stats)."""
    stats = json.loads((workdir / "report.json").read_text()).get("stats", {})
    return (int(stats.get("redis/round_trips", 0)), float(stats.get("redis/reactor_wait_seconds", 0.0)),
            float(stats.get("redis/wait_seconds", 0.0)), int(stats.get("redis/reactor_round_trips", 0)))


VARIANTS = (("embedded", 1), ("redis", 1), ("redis", 2), ("redis", 3), ("redis-remote", 1), ("redis-remote", 3),
            ("scrapy-redis", 1), ("scrapy-redis", 3), ("spider+scrapy-redis", 1), ("spider+scrapy-redis", 3))


def median(runs: list[Run]) -> Run:
    return Run(runs[0].name, runs[0].processes, int(statistics.median(r.pages for r in runs)),
               statistics.median(r.seconds for r in runs),
               statistics.median(r.bytes_per_url for r in runs),
               statistics.median(r.commands_per_page for r in runs),
               statistics.median(r.round_trips_per_page for r in runs),
               statistics.median(r.reactor_ms_per_page for r in runs),
               statistics.median(r.wait_ms_per_page for r in runs),
               statistics.median(r.reactor_trips_per_page for r in runs),
               statistics.median(r.cpu_seconds for r in runs),
               statistics.median(r.redis_cpu_ms_per_page for r in runs))


def print_table(results: dict[tuple[str, int], Run], args: argparse.Namespace) -> None:
    print(f"distributed crawl: {args.hosts} hosts x {args.pages} pages, depth {args.depth}, "
          f"CONCURRENT_REQUESTS={args.concurrency} per process, medians of {args.runs} runs, "
          f"{os.cpu_count()} CPUs; redis-remote: Redis behind a delaying proxy, "
          f"{args.measured_rtt * 1000:.2f} ms round trip" + (f"; ours with {' '.join(args.settings)}" if args.settings else ""))
    print(f"{'variant':<20}{'procs':>6}{'pages':>7}{'seconds':>9}{'pages/s':>9}{'per proc':>9}"
          f"{'B/URL':>8}{'cmds/page':>10}{'RTs/page':>9}{'reactor RTs/page':>17}{'reactor ms/page':>16}"
          f"{'wait ms/page':>13}{'pages/CPU-s':>12}{'redis CPU ms/page':>18}")
    for (name, count), r in results.items():
        embedded = name.startswith("embedded")
        bytes_per_url = "-" if embedded else f"{r.bytes_per_url:.0f}"
        commands = "-" if embedded else f"{r.commands_per_page:.1f}"
        ours = name.startswith("redis")
        trips = f"{r.round_trips_per_page:.1f}" if ours else "-"
        reactor = f"{r.reactor_ms_per_page:.3f}" if ours else "-"
        reactor_trips = f"{r.reactor_trips_per_page:.2f}" if ours else "-"
        wait = f"{r.wait_ms_per_page:.3f}" if ours else "-"
        print(f"{name:<20}{count:>6}{r.pages:>7}{r.seconds:>9.2f}{r.pages_per_second:>9.1f}"
              f"{r.pages_per_second / count:>9.1f}{bytes_per_url:>8}{commands:>10}{trips:>9}{reactor_trips:>17}"
              f"{reactor:>16}{wait:>13}{r.pages_per_cpu_second:>12.1f}"
              f"{'-' if embedded else format(r.redis_cpu_ms_per_page, '.3f'):>18}")
    for other in ("scrapy-redis", "spider+scrapy-redis"):
        for count in (1, 3):
            ours, theirs = results.get(("redis", count)), results.get((other, count))
            if ours and theirs and theirs.pages_per_second:
                print(f"redis/{other}, {count} process(es): "
                      f"{ours.pages_per_second / theirs.pages_per_second:.2f} (pages/s per process)")
    for count in (1, 2, 3):
        near, far = results.get(("redis", count)), results.get(("redis-remote", count))
        if near and far and near.pages_per_second:
            print(f"redis-remote/redis, {count} process(es): "
                  f"{far.pages_per_second / near.pages_per_second:.2f} (pages/s per process, Redis "
                  f"{args.measured_rtt * 1000:.2f} ms away vs loopback)")
    for (name, count), before in results.items():
        base, _, checkout = name.partition("@")
        after = results.get((base, count))
        if checkout and after and before.pages_per_second:
            print(f"{base}/{name}, {count} process(es): {after.pages_per_second / before.pages_per_second:.2f} "
                  f"(pages/s, this checkout over {checkout})")
    embedded, one = results.get(("embedded", 1)), results.get(("redis", 1))
    if embedded and one and embedded.pages_per_second:
        print(f"redis/embedded, 1 process: {one.pages_per_second / embedded.pages_per_second:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--variants", default="",
                        help="comma-separated name:processes (default: all), e.g. redis:1,scrapy-redis:1")
    parser.add_argument("-s", dest="settings", action="append", default=[],
                        help="NAME=VALUE for our crawls, e.g. CONTENTSEEN_ENABLED=False")
    parser.add_argument("--checkout", action="append", default=[],
                        help="NAME=PATH: also run our variants with the webcrawler checkout at PATH (repeatable)")
    parser.add_argument("--scripts", action="store_true",
                        help="also print redis-server's time by command and Lua script (SLOWLOG)")
    parser.add_argument("--remote-rtt-ms", type=float, default=2.0,
                        help="round trip to Redis of the redis-remote variants (a delaying proxy)")
    parser.add_argument("--redis-config", action="append", default=[],
                        help="NAME=VALUE set in redis-server (CONFIG SET) before the runs (repeatable)")
    args = parser.parse_args(argv)
    args.measured_rtt = 0.0
    variants = VARIANTS if not args.variants else tuple(
        (part.split(":")[0], int(part.split(":")[1])) for part in args.variants.split(","))
    roots = {name: Path(path).resolve() for name, _, path in
             (item.partition("=") for item in args.checkout)}
    variants = tuple(variant for name, count in variants for variant in
                     ((name, count), *((f"{name}@{other}", count) for other in roots
                                       if name in ("embedded", "redis", "redis-remote"))))
    runs: dict[tuple[str, int], list[Run]] = {variant: [] for variant in variants}
    for root in (ROOT, *roots.values()):
        compile_bytecode(root)
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        workdir = Path(tmp)
        config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links)
        with start_testweb(config, workdir / "web") as web, RedisServer(workdir / "redis") as server, \
                DelayProxy("127.0.0.1", int(server.url.rsplit(":", 1)[1].split("/")[0]),
                           args.remote_rtt_ms / 2000) as proxy:
            remote_url = f"redis://127.0.0.1:{proxy.port}/0"
            set_config(server.url, args.redis_config)
            args.measured_rtt = round_trip(remote_url)
            print(f"Redis round trip: loopback {round_trip(server.url) * 1000:.3f} ms, redis-remote "
                  f"{args.measured_rtt * 1000:.3f} ms (median PING)", file=sys.stderr)
            for run in range(args.runs):
                for name, count in variants:
                    result = run_variant(name, count, web, workdir / f"{name}-{count}-{run}", server, args,
                                         remote_url, roots)
                    print(f"  run {run + 1}: {name} x{count}: {result.pages} pages, "
                          f"{result.pages_per_second:.1f} pages/s", file=sys.stderr)
                    runs[(name, count)].append(result)
    print_table({variant: median(found) for variant, found in runs.items()}, args)
    if args.scripts:
        print_scripts(runs)


if __name__ == "__main__":
    main()
