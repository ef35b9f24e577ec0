"""How many small pages per second the synthetic web serves.

Starts the server (:func:`testweb.start_testweb`), then fires a bounded
number of GETs for regular pages from K concurrent keep-alive connections
(asyncio, one client process), bounded in time too, for several runs, and
prints the median. Compare with the crawler's pages/s: the server should be
at least three times faster, or a crawl benchmark measures the server.
The client shares the machine, so the figure is a lower bound.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from testweb import WebConfig, start_testweb  # noqa: E402


def request_bytes(config: WebConfig, port: int, number: int) -> bytes:
    host = f"h{number % config.hosts:04d}.test"
    path = "/" if number % 7 == 0 else f"/p/{number % config.pages}.html"
    return f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: speed\r\n\r\n".encode()


async def client(port: int, requests: list[bytes], deadline: float) -> int:
    """Send ``requests`` one after another on one connection; count answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    done = 0
    try:
        for request in requests:
            if time.monotonic() > deadline:
                break
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0])
            await reader.readexactly(length)
            done += 1
    finally:
        writer.close()
    return done


async def one_run(config: WebConfig, port: int, total: int, connections: int, seconds: float) -> float:
    requests = [request_bytes(config, port, n) for n in range(total)]
    shares = [requests[k::connections] for k in range(connections)]
    start = time.monotonic()
    counts = await asyncio.gather(*(client(port, share, start + seconds) for share in shares))
    return sum(counts) / (time.monotonic() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0, help="time bound per run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    config = WebConfig()
    with tempfile.TemporaryDirectory(prefix="testweb-speed-") as tmp, \
            start_testweb(config, Path(tmp)) as web:
        rates = [asyncio.run(one_run(config, web.port, args.requests, args.connections, args.seconds))
                 for _ in range(args.runs)]
        logged = len(web.entries())
    print(f"testweb: {args.requests} requests per run, {args.connections} keep-alive connections")
    print(f"{'run':<6}{'pages/s':>10}")
    for number, rate in enumerate(rates, 1):
        print(f"{number:<6}{rate:>10.0f}")
    print(f"{'median':<6}{statistics.median(rates):>10.0f}   ({logged} responses logged)")


if __name__ == "__main__":
    main()
