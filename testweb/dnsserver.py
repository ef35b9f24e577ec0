"""A real DNS server for tests and benchmarks: dnslib on a loopback UDP port, in a thread.

The zone is set from the test (``answer``, ``answer_suffix``, ``alias``,
``nxdomain``, ``servfail``, ``delay``); a name it does not know gets an
NXDOMAIN without SOA. ``dead = True`` makes the server read and count
queries but never answer. Every query received is counted per name
(``count(name)``, ``total()``), so a test sees exactly what a resolver sent.

Delayed answers are kept in a heap and sent by the same loop when due, so a
slow name never holds up the others.
"""

from __future__ import annotations

import heapq
import itertools
import select
import socket
import threading
import time
from collections import Counter
from types import TracebackType

from dnslib import CNAME, QTYPE, RCODE, RR, SOA, A, DNSRecord

POLL_SECONDS = 0.05  # how often the loop notices stop(); it synchronises nothing


class DnsServer:
    """Answers A queries from a zone on ``127.0.0.1:port`` (``nameserver``)."""

    def __init__(self, host: str = "127.0.0.1"):
        self.addresses: dict[str, tuple[str, int]] = {}
        self.suffixes: dict[str, tuple[str, int]] = {}
        self.aliases: dict[str, tuple[str, int, bool]] = {}
        self.missing: dict[str, int | None] = {}
        self.failing: set[str] = set()
        self.delays: dict[str, float] = {}
        self.dead = False
        self.queries: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind((host, 0))
        self.port: int = self.socket.getsockname()[1]
        self.nameserver = f"{host}:{self.port}"
        self.pending: list[tuple[float, int, bytes, tuple[str, int]]] = []
        self.sequence = itertools.count()
        self.running = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    # --- the zone ------------------------------------------------------------
    def answer(self, name: str, address: str, ttl: int = 300) -> None:
        self.addresses[name.lower()] = (address, ttl)

    def answer_suffix(self, suffix: str, address: str, ttl: int = 300) -> None:
        """Every name ending in ``suffix`` (e.g. ``.test``) resolves to ``address``."""
        self.suffixes[suffix.lower()] = (address, ttl)

    def alias(self, name: str, target: str, ttl: int = 300, with_target: bool = True) -> None:
        """A CNAME; ``with_target`` also puts the target's A record in the answer."""
        self.aliases[name.lower()] = (target.lower(), ttl, with_target)

    def nxdomain(self, name: str, soa_minimum: int | None = None) -> None:
        """NXDOMAIN, with an SOA (TTL 3600, this minimum) in the authority section if given."""
        self.missing[name.lower()] = soa_minimum

    def servfail(self, name: str) -> None:
        self.failing.add(name.lower())

    def delay(self, name: str, seconds: float) -> None:
        self.delays[name.lower()] = seconds

    # --- what it saw ---------------------------------------------------------
    def count(self, name: str) -> int:
        with self.lock:
            return self.queries[name.lower()]

    def total(self) -> int:
        with self.lock:
            return sum(self.queries.values())

    def names(self) -> set[str]:
        with self.lock:
            return set(self.queries)

    # --- running -------------------------------------------------------------
    def __enter__(self) -> DnsServer:
        self.running.set()
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.running.clear()
        self.thread.join(timeout=10)
        self.socket.close()

    def serve(self) -> None:
        while self.running.is_set():
            wait = POLL_SECONDS
            if self.pending:
                wait = min(wait, max(self.pending[0][0] - time.monotonic(), 0.0))
            readable, _, _ = select.select([self.socket], [], [], wait)
            if readable:
                data, client = self.socket.recvfrom(4096)
                self.receive(data, client)
            while self.pending and self.pending[0][0] <= time.monotonic():
                _, _, reply, client = heapq.heappop(self.pending)
                self.socket.sendto(reply, client)

    def receive(self, data: bytes, client: tuple[str, int]) -> None:
        try:
            request = DNSRecord.parse(data)
        except Exception:  # not DNS: a test server ignores it
            return
        name = str(request.q.qname).rstrip(".").lower()
        with self.lock:
            self.queries[name] += 1
        if self.dead:
            return
        due = time.monotonic() + self.delays.get(name, 0.0)
        heapq.heappush(self.pending, (due, next(self.sequence), self.reply(request, name), client))

    def reply(self, request: DNSRecord, name: str) -> bytes:
        reply = request.reply()
        if name in self.failing:
            reply.header.rcode = RCODE.SERVFAIL
            return reply.pack()
        if name in self.aliases:
            target, ttl, with_target = self.aliases[name]
            reply.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(target), ttl=ttl))
            found = self.lookup(target)
            if with_target and found is not None and request.q.qtype == QTYPE.A:
                reply.add_answer(RR(target, QTYPE.A, rdata=A(found[0]), ttl=found[1]))
            return reply.pack()
        found = self.lookup(name)
        if found is None:
            reply.header.rcode = RCODE.NXDOMAIN
            minimum = self.missing.get(name)
            if minimum is not None:
                soa = SOA("ns.test", "admin.test", (1, 3600, 600, 86400, minimum))
                reply.add_auth(RR("test", QTYPE.SOA, rdata=soa, ttl=3600))
        elif request.q.qtype == QTYPE.A:
            reply.add_answer(RR(name, QTYPE.A, rdata=A(found[0]), ttl=found[1]))
        return reply.pack()

    def lookup(self, name: str) -> tuple[str, int] | None:
        if name in self.missing:
            return None
        if name in self.addresses:
            return self.addresses[name]
        for suffix, found in self.suffixes.items():
            if name.endswith(suffix):
                return found
        return None
