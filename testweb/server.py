"""The synthetic web's HTTP/1.1 server: one loopback port, virtual hosts.

An ``asyncio.Protocol`` (streams cost a third of the throughput) with
keep-alive, pipelining, ``Content-Length`` on every response, HEAD and GET.
The page is chosen by the ``Host`` header and the canonical form of the
request target, so ``?b=2&a=1`` and ``?a=1&b=2`` are the same page; the
access log keeps the target as requested. Slow pages wait with
``asyncio.sleep`` and the big page streams under flow control, so neither
holds up other connections.

Access log: one TSV line per response (``start end host path status
bytes``; ``start`` when the request head arrived, ``end`` just before the last
byte was handed to the socket (before, not after: a process preempted after
the write would stamp a time later than the client's receipt, and
politeness gaps read off the log must be lower bounds), both ``time.time()``; ``bytes`` counts the body),
buffered and written every :data:`FLUSH_INTERVAL` seconds, on a request for
:data:`FLUSH_PATH` (on any host, not logged) and at shutdown.

Server state: the model is a pure function, except for one path. The first
``config.robots_flaky_failures`` requests (GET or HEAD, any connection) for
``robots-flaky.test/robots.txt`` since the server started, or since the
last request for :data:`RESET_PATH` (on any host, not logged), get a 503;
later ones the model's 200. The access log shows each answer's status.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from http import HTTPStatus
from pathlib import Path
from typing import Callable, NamedTuple

from testweb.model import ROBOTS_FLAKY_HOST, Page, SiteModel, WebConfig, canonical_url

FLUSH_PATH = "/__testweb/flush"
RESET_PATH = "/__testweb/reset"
FLUSH_INTERVAL = 0.5
MAX_HEAD = 65536
_SIMPLE_TARGET = re.compile(r"/[A-Za-z0-9/_~-]*(?:\.[A-Za-z0-9]+)?")
_REASONS = {status.value: status.phrase for status in HTTPStatus}


class Entry(NamedTuple):
    """One access-log line."""

    start: float
    end: float
    host: str
    path: str
    status: int
    bytes: int


def read_access_log(path: Path | str) -> list[Entry]:
    """Every entry written to the access log at ``path`` so far."""
    entries = []
    with open(path, encoding="utf-8") as log:
        for line in log:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 6:
                start, end, host, target, status, size = fields
                entries.append(Entry(float(start), float(end), host, target, int(status), int(size)))
    return entries


class AccessLog:
    """Buffered TSV access log; :meth:`flush` makes it complete on disk."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.lines: list[str] = []

    def add(self, start: float, end: float, host: str, path: str, status: int, size: int) -> None:
        path = path.replace("\t", "%09").replace("\n", "%0A")
        self.lines.append(f"{start:.6f}\t{end:.6f}\t{host}\t{path}\t{status}\t{size}\n")

    def flush(self) -> None:
        if self.lines:
            self.file.write("".join(self.lines))
            self.lines.clear()
        self.file.flush()

    def close(self) -> None:
        self.flush()
        self.file.close()


class Request(NamedTuple):
    start: float
    method: str
    target: str
    host: str
    keep_alive: bool


def parse_head(head: bytes, start: float) -> Request | None:
    """The request line and the headers we need; ``None`` if malformed."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    method, target, version = parts
    host, connection = "", ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "host":
            host = value.strip()
        elif name == "connection":
            connection = value.strip().lower()
    if target.startswith(("http://", "https://")):  # absolute-form
        scheme_end = target.index("//") + 2
        slash = target.find("/", scheme_end)
        host = host or target[scheme_end:slash if slash >= 0 else None]
        target = target[slash:] if slash >= 0 else "/"
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    host = host.rpartition(":")[0] if host.count(":") == 1 else host
    return Request(start, method.upper(), target, host.lower(), keep_alive)


def response_head(page: Page, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {page.status} {_REASONS.get(page.status, 'Unknown')}",
             f"Content-Type: {page.content_type}", f"Content-Length: {page.length}",
             "Server: testweb"]
    if page.location:
        lines.append(f"Location: {page.location}")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class WebServer:
    """The shared state of all connections: the model, the access log and the
    robots.txt request counts behind robots-flaky.test's 503s."""

    def __init__(self, model: SiteModel, log: AccessLog) -> None:
        self.model, self.log = model, log
        self.connections: set[HttpProtocol] = set()
        self.robots_requests: dict[str, int] = {}  # host -> robots.txt requests since reset

    def control(self, path: str) -> bytes:
        """Act on a control path; the body to answer with."""
        if path == RESET_PATH:
            self.robots_requests.clear()
            return b"reset\n"
        self.log.flush()
        return b"flushed\n"

    def lookup(self, request: Request) -> Page:
        target = request.target
        if not _SIMPLE_TARGET.fullmatch(target):
            try:
                canonical = canonical_url(f"http://{request.host or 'invalid'}{target}")
                target = canonical[canonical.index("/", 8):]
            except ValueError:
                pass
        host = request.host
        if not self.model.knows(host):
            return self.model.page("unknown.invalid", target)
        if host == ROBOTS_FLAKY_HOST and target == "/robots.txt":
            return self.flaky_robots(host)
        return self.model.page(host, target)

    def flaky_robots(self, host: str) -> Page:
        """503 for the first ``robots_flaky_failures`` requests since reset, then the model's page."""
        count = self.robots_requests[host] = self.robots_requests.get(host, 0) + 1
        if count <= self.model.config.robots_flaky_failures:
            return Page(503, "text/plain", b"robots.txt temporarily unavailable\n")
        return self.model.page(host, "/robots.txt")


class HttpProtocol(asyncio.Protocol):
    """One client connection; requests are answered strictly in order."""

    def __init__(self, server: WebServer) -> None:
        self.server = server
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.busy: asyncio.Task[None] | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.closing = True
        self.writable.set()
        if self.busy:
            self.busy.cancel()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.busy is None:
            self.process()

    def process(self) -> None:
        """Answer every complete request in the buffer, stopping at a slow one."""
        while not self.closing and self.busy is None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self.close()
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4:]
            request = parse_head(head, time.time())
            if request is None:
                self.transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                self.close()
                return
            self.answer(request)

    def answer(self, request: Request) -> None:
        if request.target in (FLUSH_PATH, RESET_PATH):
            reply = self.server.control(request.target)
            self.transport.write(response_head(Page(200, "text/plain", reply), request.keep_alive)
                                 + (b"" if request.method == "HEAD" else reply))
            return self.finish(request)
        page = self.server.lookup(request)
        if page.delay or page.stream:
            self.busy = asyncio.get_running_loop().create_task(self.answer_slowly(request, page))
            return None
        body = b"" if request.method == "HEAD" else page.body
        end = time.time()  # before the write: the process may be preempted after it
        self.transport.write(response_head(page, request.keep_alive) + body)
        self.server.log.add(request.start, end, request.host, request.target, page.status, len(body))
        return self.finish(request)

    async def answer_slowly(self, request: Request, page: Page) -> None:
        if page.delay:
            await asyncio.sleep(page.delay)
        end = time.time()
        self.transport.write(response_head(page, request.keep_alive))
        sent = 0
        if request.method != "HEAD":
            chunks = page.stream[1]() if page.stream else iter((page.body,))
            for chunk in chunks:
                await self.writable.wait()
                if self.closing:
                    return
                end = time.time()
                self.transport.write(chunk)
                sent += len(chunk)
        self.server.log.add(request.start, end, request.host, request.target, page.status, sent)
        self.busy = None
        self.finish(request)
        self.process()

    def finish(self, request: Request) -> None:
        if not request.keep_alive:
            self.close()

    def close(self) -> None:
        self.closing = True
        if self.transport:
            self.transport.close()


def write_support_files(model: SiteModel, workdir: Path) -> None:
    """``hosts`` (hosts(5) for DNS_HOSTS) and ``seeds.txt`` in ``workdir``."""
    (workdir / "hosts").write_text(hosts_file_text(model.hosts))
    (workdir / "seeds.txt").write_text("".join(f"{url}\n" for url in model.seeds))


def hosts_file_text(hosts: list[str]) -> str:
    return "".join(f"127.0.0.1\t{host}\n" for host in hosts)


async def serve(config: WebConfig, port: int, workdir: Path,
                model_class: Callable[..., SiteModel] = SiteModel) -> None:
    """Serve until SIGTERM or SIGINT; prints ``listening PORT`` when ready.
    ``model_class(config, port)`` builds the web (another web than the
    default one, e.g. :class:`testweb.trapweb.TrapWeb`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.get_running_loop()
    log = AccessLog(workdir / "access.log")
    holder: list[WebServer] = []
    listener = await loop.create_server(lambda: HttpProtocol(holder[0]), "127.0.0.1", port,
                                        reuse_address=True, backlog=1024)
    actual_port = listener.sockets[0].getsockname()[1]
    web = WebServer(model_class(config, actual_port), log)
    holder.append(web)
    write_support_files(web.model, workdir)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    flusher = loop.create_task(flush_periodically(log))
    print(f"listening {actual_port}", flush=True)
    await stop.wait()
    flusher.cancel()
    listener.close()
    for connection in list(web.connections):
        connection.close()
    log.close()


async def flush_periodically(log: AccessLog) -> None:
    while True:
        await asyncio.sleep(FLUSH_INTERVAL)
        log.flush()
