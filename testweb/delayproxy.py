"""A TCP proxy on loopback that delays every byte by a fixed time each way.

For measuring a crawl whose Redis is across a network (the kernel's ``netem``
qdisc is not available everywhere): :class:`DelayProxy` runs
``python -m testweb.delayproxy`` in a process of its own, listening on a free
``127.0.0.1`` port and forwarding each connection to ``target``; what one side
sends is written to the other ``one_way`` seconds after it was read, in
order, so a request and its answer take at least ``2 * one_way`` more than
without the proxy. :func:`round_trip` measures what a client actually sees
(Redis ``PING`` through the proxy): the threads' wake-ups add to the delay.
"""

from __future__ import annotations

import argparse
import queue
import socket
import statistics
import subprocess
import sys
import threading
import time


def _pump(source: socket.socket, sink: socket.socket, one_way: float) -> None:
    """Copy ``source`` to ``sink``, each chunk ``one_way`` seconds late (a
    reader and a writer thread; the writer sleeps until a chunk is due)."""
    pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def write() -> None:
        try:
            while chunk := _due(pending):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(sink, source)

    threading.Thread(target=write, daemon=True).start()
    try:
        while chunk := source.recv(65536):
            pending.put((time.monotonic() + one_way, chunk))
    except OSError:
        pass
    pending.put((0.0, b""))


def _due(pending: queue.SimpleQueue[tuple[float, bytes]]) -> bytes:
    due, chunk = pending.get()
    wait = due - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    return chunk


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(target_host: str, target_port: int, one_way: float) -> None:
    """Listen on a free loopback port (printed), forward each connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((target_host, target_port))
        except OSError:
            client.close()
            continue
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_pump, args=(client, upstream, one_way), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, client, one_way), daemon=True).start()


class DelayProxy:
    """``python -m testweb.delayproxy`` in a process of its own; ``port`` is
    where it listens (a context manager: stopped at exit)."""

    def __init__(self, target_host: str, target_port: int, one_way: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "testweb.delayproxy", target_host, str(target_port), str(one_way)],
            stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.strip().isdigit():
            self.process.kill()
            raise RuntimeError(f"delay proxy did not start (said {line!r})")
        self.port = int(line)

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def round_trip(url: str, pings: int = 200) -> float:
    """The median seconds of a Redis ``PING`` at ``url`` (bounded: ``pings``)."""
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(url)
    try:
        client.ping()
        times = []
        for _ in range(pings):
            started = time.perf_counter()
            client.ping()
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("one_way", type=float, help="seconds each chunk is held, each way")
    args = parser.parse_args()
    serve(args.host, args.port, args.one_way)


if __name__ == "__main__":
    main()
