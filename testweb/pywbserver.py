"""pywb, the web archive replay tool, serving a crawl's WARC files on loopback.

:func:`start_pywb` makes a pywb collection the way its own manager does
(``wb-manager init NAME``: ``collections/NAME/archive`` and ``indexes``),
links the crawl's WARC files into ``archive/`` and their CDXJ files (the
crawler's own index, not pywb's) into ``indexes/``, and runs ``wayback`` on
a free loopback port until the block ends. Its ``config.yaml`` turns framed
replay off: a page replayed for a browser is the page itself (with pywb's
banner), not a frame around it, so its DOM can be read. :meth:`Pywb.get` fetches a
replay URL with ``http.client`` (no proxy settings apply).

pywb lives in a virtualenv of its own, ``<venv>/pywb`` (``make pywb``;
``requirements-pywb.txt`` says why): a missing one is a test failure naming
the fix, never a skip.
"""

from __future__ import annotations

import http.client
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testweb.waiting import NoProgress, wait_until

PYWB_BIN = Path(sys.prefix) / "pywb" / "bin"
START_POLLS = 600  # 50 ms apart: pywb imports gevent and its templates first
STOP_TIMEOUT = 10.0


class MissingPywb(RuntimeError):
    """pywb's virtualenv is not there (the message says how to make it)."""


def pywb_tool(name: str) -> Path:
    """A pywb command (``wayback``, ``wb-manager``, ``cdx-indexer``)."""
    tool = PYWB_BIN / name
    if not tool.exists():
        raise MissingPywb(f"pywb is not installed in {PYWB_BIN.parent}: run `make pywb` (make test does)")
    return tool


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Pywb:
    """A running ``wayback`` serving collection ``collection``."""

    port: int
    collection: str
    root: Path

    def replay_url(self, url: str, timestamp: str = "", modifier: str = "id_") -> str:
        """The replay URL of ``url`` closest to ``timestamp`` (14 digits or a
        prefix); ``id_``: the archived bytes as they are, ``mp_``: rewritten
        for a browser."""
        return f"http://127.0.0.1:{self.port}/{self.collection}/{timestamp}{modifier}/{url}"

    def get(self, url: str, timestamp: str = "", modifier: str = "id_") -> Reply:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request("GET", self.replay_url(url, timestamp, modifier).split(str(self.port), 1)[1])
            answer = connection.getresponse()
            return Reply(answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read())
        finally:
            connection.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def start_pywb(root: Path, warc_dir: Path, collection: str = "crawl") -> Iterator[Pywb]:
    """``wayback`` serving the WARC and CDXJ files of ``warc_dir``."""
    wayback, manager = pywb_tool("wayback"), pywb_tool("wb-manager")
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(manager), "init", collection], cwd=root, check=True, capture_output=True, timeout=120)
    (root / "config.yaml").write_text("framed_replay: false\n")
    archive, indexes = root / "collections" / collection / "archive", root / "collections" / collection / "indexes"
    for path in sorted(warc_dir.glob("*.warc.gz")):
        (archive / path.name).symlink_to(path.resolve())
    for path in sorted(warc_dir.glob("*.cdxj")):
        (indexes / path.name).symlink_to(path.resolve())
    port = _free_port()
    with open(root / "wayback.log", "wb") as log:
        process = subprocess.Popen([str(wayback), "-p", str(port), "-b", "127.0.0.1"], cwd=root,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = Pywb(port, collection, root)
    try:
        _wait_until_up(process, server)
        yield server
    finally:
        _stop(process)


def _wait_until_up(process: subprocess.Popen[bytes], server: Pywb) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"wayback exited with {process.returncode}: "
                               f"{(server.root / 'wayback.log').read_text(errors='replace')[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1.0):
                return True
        except OSError:
            return False

    try:
        wait_until(up, "pywb's wayback listening", patience=START_POLLS, interval=0.05)
    except NoProgress as err:
        raise RuntimeError(str(err)) from err


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
