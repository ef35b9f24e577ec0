"""Real ``redis-server`` processes on loopback for tests and benchmarks.

:class:`RedisServer` runs one ``redis-server`` in a directory of its own
(``--dir``; its log, AOF and cluster config there) on a free ``127.0.0.1``
port, RDB snapshots off (``--save ''``) and AOF on request
(``appendfsync everysec``, the durability the Redis store documents).
:class:`RedisClusterServers` runs three of them with ``--cluster-enabled yes``
and joins them with ``redis-cli --cluster create`` into a 3-master cluster
(no replicas), waiting for ``cluster_state:ok``.

No ``redis-server`` binary is an error naming the fix (a test failure, never
a skip): ``make test`` installs it (``apt-get install redis-server``).

:func:`shared_server` is one server per test process, started on first use
and stopped at exit, for the frontier suites' ``make_store("redis", ...)``;
each store there gets a key prefix of its own (:func:`unique_prefix`), so
tests never see each other's keys. The pytest fixtures in ``tests/conftest.py``
(``redis_server``, ``redis_cluster``, ``redis_aof_server``) are the same servers.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from testweb.waiting import NoProgress, wait_until

#: polls of a starting server (20 ms apart, plus each poll's own time) before giving up
START_POLLS = 1000
STOP_TIMEOUT = 10.0
MISSING = (
    "redis-server is not installed: the Redis store's tests need a real one. "
    "`make test` installs it (apt-get install redis-server)."
)

_prefixes = itertools.count(1)


class RedisMissing(RuntimeError):
    """No ``redis-server`` (or ``redis-cli``) on the PATH."""


def redis_binary(name: str = "redis-server") -> str:
    """The path of ``name``; :class:`RedisMissing` naming the fix when it is missing."""
    path = shutil.which(name)
    if path is None:
        raise RedisMissing(MISSING.replace("redis-server is", f"{name} is"))
    return path


def unique_prefix() -> str:
    """A key prefix no other store in this test session uses."""
    return f"t{os.getpid()}-{next(_prefixes)}"


def free_port(cluster: bool = False) -> int:
    """A free loopback port; for a cluster node also its bus port (+10000)."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if not cluster:
            return port
        if port + 10000 < 65536 and _bindable(port + 10000):
            return port
    raise RuntimeError("no free loopback port pair for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def set_config(url: str, items: Sequence[str]) -> None:
    """``CONFIG SET`` each ``NAME=VALUE`` of ``items`` in the server at ``url``."""
    if not items:
        return
    import redis  # noqa: PLC0415 - only the benches that set a config need it

    client = redis.Redis.from_url(url)
    try:
        for item in items:
            name, _, value = item.partition("=")
            client.config_set(name, value)
    finally:
        client.close()


class RedisServer:
    """One running ``redis-server``; a context manager that stops it on exit."""

    def __init__(self, directory: Path, appendonly: bool = False, cluster: bool = False,
                 port: int | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.appendonly, self.cluster = appendonly, cluster
        self.port = port or free_port(cluster)
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def logfile(self) -> Path:
        return self.directory / "redis.log"

    def command(self) -> list[str]:
        cmd = [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", str(self.directory), "--save", "", "--daemonize", "no",
               "--logfile", str(self.logfile), "--protected-mode", "no",
               "--appendonly", "yes" if self.appendonly else "no",
               "--appendfsync", "everysec"]
        if self.cluster:
            cmd += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "5000"]
        return cmd

    def start(self) -> None:
        """Start (again, on the same port and directory after :meth:`kill`)."""
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    def _wait_until_up(self) -> None:
        def up() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{self.log()}")
            return self.ping()

        try:
            wait_until(up, "answer to PING from redis-server", patience=START_POLLS, interval=0.02)
        except NoProgress as err:
            raise RuntimeError(f"{err}:\n{self.log()}") from err

    def ping(self) -> bool:
        try:
            return self.cli("PING", timeout=2.0).strip() == "PONG"
        except (OSError, subprocess.SubprocessError):
            return False

    def cli(self, *args: str, timeout: float = 10.0) -> str:
        """``redis-cli`` against this server; its standard output."""
        out = subprocess.run([redis_binary("redis-cli"), "-h", "127.0.0.1", "-p", str(self.port), *args],
                             capture_output=True, text=True, timeout=timeout)
        return out.stdout

    def wait_until_in_aof(self, needle: bytes, polls: int = 250) -> float:
        """Poll the AOF files until ``needle`` is written there (``appendfsync
        everysec`` writes within about a second), at most ``polls`` times
        (:class:`~testweb.waiting.NoProgress`); return the seconds taken."""
        def written() -> bool:
            return any(needle in path.read_bytes() for path in (self.directory / "appendonlydir").glob("*.aof"))

        start = time.monotonic()
        wait_until(written, f"{needle!r} in the AOF", patience=polls, interval=0.02)
        return time.monotonic() - start

    def log(self) -> str:
        return self.logfile.read_text(errors="replace")[-4000:] if self.logfile.exists() else ""

    def kill(self) -> None:
        """SIGKILL (a crash): no final AOF rewrite, no shutdown save."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RedisClusterServers:
    """Three cluster-enabled servers joined into one 3-master cluster."""

    def __init__(self, directory: Path) -> None:
        self.nodes: list[RedisServer] = []
        try:
            for index in range(3):
                self.nodes.append(RedisServer(Path(directory) / f"node{index}", cluster=True))
            self._create()
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """Any node's URL: the client discovers the others."""
        return self.nodes[0].url

    def _create(self) -> None:
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        out = subprocess.run(
            [redis_binary("redis-cli"), "--cluster", "create", *addresses,
             "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout}\n{out.stderr}")
        try:
            wait_until(lambda: all("cluster_state:ok" in node.cli("CLUSTER", "INFO") for node in self.nodes),
                       "cluster_state:ok on every node", patience=START_POLLS // 2, interval=0.05)
        except NoProgress as err:
            raise RuntimeError(f"{err}:\n" + "\n".join(node.log() for node in self.nodes)) from err

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisClusterServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_shared: dict[str, object] = {}


def _shared_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="redis-tests-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


def shared_server() -> RedisServer:
    """This process's single Redis, started on first use, stopped at exit."""
    server = _shared.get("single")
    if server is None:
        server = RedisServer(_shared_dir() / "single")
        atexit.register(server.stop)
        _shared["single"] = server
    return server  # type: ignore[return-value]


def shared_cluster() -> RedisClusterServers:
    """This process's 3-master cluster, started on first use, stopped at exit."""
    cluster = _shared.get("cluster")
    if cluster is None:
        cluster = RedisClusterServers(_shared_dir() / "cluster")
        atexit.register(cluster.stop)
        _shared["cluster"] = cluster
    return cluster  # type: ignore[return-value]
