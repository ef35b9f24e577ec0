"""One connection to Redis (a single server or any node of a Redis Cluster)
for every Redis component of a crawler: one pipeline, scripts called by
SHA, logged retries with back-off, passwords kept out of messages."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from twisted.python.threadable import isInIOThread

import redis
from extensions.frontier.store import FrontierStoreError
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.retry import Retry

logger = logging.getLogger(__name__)

T = TypeVar("T")


def redact(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class LoggingRetry(Retry):
    """redis-py's retry with exponential back-off, logging every failure."""

    def __init__(self, location: str, retries: int) -> None:
        super().__init__(ExponentialBackoff(cap=2.0, base=0.1), retries)
        self.location = location
        self.failures = 0  # failed attempts: a retried command may have run twice

    def call_with_retry(self, do: Callable[[], T], fail: Callable[..., Any],
                        is_retryable: Callable[[Exception], bool] | None = None,
                        with_failure_count: bool = False) -> T:
        def logged(error: Exception, failures: int) -> Any:
            self.failures += 1
            if failures <= self._retries:
                logger.warning("Redis at %s failed (%s); retry %d of %d",
                               self.location, error, failures, self._retries)
            return fail(error, failures) if with_failure_count else fail(error)

        return super().call_with_retry(do, logged, is_retryable, with_failure_count=True)


def connect(url: str, timeout: float, retry: Retry) -> Any:
    """A client for ``url``: a cluster client if the server is a cluster node."""
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    probe = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **options)
    db = probe.connection_pool.connection_kwargs.get("db", 0)
    try:
        in_cluster = probe.info("cluster").get("cluster_enabled") == 1
    except ResponseError as err:
        probe.close()
        if "cluster mode" in str(err):  # SELECT of another database
            raise ValueError(f"a Redis Cluster has only database 0, not {db}") from err
        raise
    except BaseException:
        probe.close()
        raise
    if not in_cluster:
        probe.set_retry(retry)
        return probe
    probe.close()
    return RedisCluster.from_url(url, retry=retry, **options)


class RedisLayerError(FrontierStoreError):
    """Redis failed (after the retries) or refused a command; the message names the server."""


#: every script's source -> its SHA1 (what EVALSHA names it by)
_SHAS: dict[str, str] = {}


def sha_of(source: str) -> str:
    """The SHA1 Redis gives ``source``, registered on first use."""
    sha = _SHAS.get(source)
    if sha is None:
        sha = _SHAS[source] = hashlib.sha1(source.encode()).hexdigest()  # noqa: S324 - Redis' own name
    return sha


class RedisConnection:
    """One client and one non-transactional pipeline to one Redis, shared by a crawler's Redis
    components: :meth:`write` buffers, :meth:`call` sends the buffer and its own commands in
    order. Scripts a server lost are loaded and their commands resent. Not thread-safe."""

    def __init__(self, url: str, *, retries: int = 6, timeout: float | None = 10.0, batch: int = 1024) -> None:
        self.url, self.location = url, redact(url)
        self.retries, self.timeout, self.batch = retries, timeout, batch
        self.round_trips = 0  # pipelines sent
        self.wait_seconds = 0.0  # waiting for Redis, in all and on the reactor thread
        self.reactor_seconds = 0.0
        self.reactor_round_trips = 0
        self.script_reloads = 0  # pipelines in which the server had lost the scripts
        self.users = 0
        self.client: Any = None
        self._pipe: Any = None
        self._commands: list[tuple[Any, ...]] = []  # what the pipeline holds, for a NOSCRIPT replay
        self.retry: LoggingRetry | None = None  # its failures count the failed calls
        self._registries: dict[str, Any] = {}
        self._loaded: set[str] = set()  # SHAs of the scripts the server has

    # -- lifecycle ---------------------------------------------------------------
    def attach(self, purpose: str, error: type[Exception] = FrontierStoreError) -> RedisConnection:
        """One more user; the first connects (a failure raises ``error`` naming ``purpose``)."""
        if self.client is None:
            self.open(purpose, error)
        self.users += 1
        return self

    def detach(self) -> None:
        """One user fewer: the last one sends the buffered writes and closes."""
        self.users -= 1
        if self.users <= 0 and self.client is not None:
            try:
                self.flush()
            finally:
                self.close()

    def open(self, purpose: str, error: type[Exception] = FrontierStoreError) -> None:
        try:
            self.retry = LoggingRetry(self.location, self.retries)
            self.client = connect(self.url, self.timeout, self.retry)
            self._pipe = self.client.pipeline(transaction=False)
            self.load_scripts()
        except ValueError as err:
            self.close()
            raise error(f"cannot use Redis at {self.location} for {purpose}: {err}") from err
        except (RedisError, OSError) as err:
            self.close()
            raise error(f"cannot reach Redis at {self.location} for {purpose}: {err} "
                        "(is redis-server running there? check REDIS_URL)") from err

    def close(self) -> None:
        """Drop the connection without sending buffered writes."""
        if self._pipe is not None:
            self._pipe.reset()
        if self.client is not None:
            self.client.close()
        self.client = self._pipe = None
        self._commands = []
        self.users = 0

    @property
    def cluster(self) -> bool:
        return isinstance(self.client, RedisCluster)

    @property
    def failures(self) -> int:
        """Failed Redis calls so far (each retried: a command may have run twice)."""
        return self.retry.failures if self.retry is not None else 0

    def registry(self, key: str, factory: Callable[[], T]) -> T:
        """The one object of ``key`` on this connection, made by ``factory`` on first use."""
        if key not in self._registries:
            self._registries[key] = factory()
        return self._registries[key]

    def load_scripts(self) -> None:
        """SCRIPT LOAD of every registered script (on every master)."""
        sources = list(_SHAS)
        if self.cluster:
            for source in sources:
                self.client.script_load(source)
        else:
            pipe = self.client.pipeline(transaction=False)
            for source in sources:
                pipe.execute_command("SCRIPT", "LOAD", source)
            pipe.execute()
        self._loaded = {_SHAS[source] for source in sources}

    # -- the pipeline --------------------------------------------------------------
    def write(self, *command: Any) -> None:
        """Buffer a command whose answer nobody needs (sent with the next call)."""
        self._buffer(command)
        if len(self._commands) >= self.batch:
            self.flush()

    def call(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send the buffered writes and ``commands``; the answers to ``commands``."""
        start = len(self._commands)
        for command in commands:
            self._buffer(command)
        if not self._commands:
            return []
        return self._execute()[start:]

    def flush(self) -> bool:
        """Send the buffered writes; whether there were any."""
        if self._pipe is None or not self._commands:
            return False
        self._execute()
        return True

    def pending(self) -> int:
        return len(self._commands)

    def take_buffered(self) -> list[tuple[Any, ...]]:
        """Hand over the buffered writes, in order, for the caller to send."""
        commands, self._commands = self._commands, []
        if commands and self._pipe is not None:
            self._pipe.reset()
        return commands

    def _buffer(self, command: tuple[Any, ...]) -> None:
        if self._pipe is None:
            raise RedisLayerError(f"the Redis connection to {self.location} is not open")
        if command[0] == "EVAL":  # by SHA once the server has it; EVAL loads it
            sha = sha_of(command[1])
            if sha in self._loaded:
                command = ("EVALSHA", sha, *command[2:])
            else:
                self._loaded.add(sha)
        self._pipe.execute_command(*command)
        self._commands.append(command)

    def _execute(self) -> list[Any]:
        commands, self._commands = self._commands, []
        results = self._send(self._pipe, commands)
        missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
        if missing:
            self.script_reloads += 1
            logger.warning("Redis at %s lost its scripts (restart, fail-over or SCRIPT FLUSH): "
                           "loading them again", self.location)
            try:
                self.load_scripts()
            except RedisError as err:
                raise RedisLayerError(f"Redis at {self.location} failed: {err}") from err
            again = self._send(self.client.pipeline(transaction=False), [commands[i] for i in missing])
            for i, result in zip(missing, again):
                results[i] = result
        for result in results:
            if isinstance(result, Exception):
                raise RedisLayerError(f"Redis at {self.location} refused a command: {result}") from result
        return results

    def _send(self, pipe: Any, commands: list[tuple[Any, ...]]) -> list[Any]:
        if pipe is not self._pipe:
            for command in commands:
                pipe.execute_command(*command)
        self.round_trips += 1
        started = time.perf_counter()
        try:
            return pipe.execute(raise_on_error=False)
        except RedisError as err:
            raise RedisLayerError(f"Redis at {self.location} failed: {err}") from err
        finally:
            self._waited(time.perf_counter() - started)

    def _waited(self, seconds: float, round_trips: int = 1) -> None:
        self.wait_seconds += seconds
        if isInIOThread():
            self.reactor_seconds += seconds
            self.reactor_round_trips += round_trips

    def timing(self) -> dict[str, float]:
        """Stats ``redis/*``: round trips and waits, in all and on the reactor thread."""
        return {"redis/round_trips": self.round_trips, "redis/wait_seconds": round(self.wait_seconds, 6),
                "redis/reactor_round_trips": self.reactor_round_trips,
                "redis/reactor_wait_seconds": round(self.reactor_seconds, 6)}

    # -- reads outside the pipeline --------------------------------------------------
    def scan(self, pattern: str) -> Iterator[bytes]:
        """Every key matching ``pattern`` once (on every master), after the buffered writes."""
        self.flush()
        return self._once(self.client.scan_iter(match=pattern, count=1000), lambda key: key)

    def hscan(self, key: bytes | str, batch: int) -> Iterator[tuple[bytes, bytes]]:
        """Every field of hash ``key`` and its value, once."""
        return self._once(self.client.hscan_iter(key, count=batch), lambda pair: pair[0])

    def _once(self, found: Iterator[T], key: Callable[[T], bytes]) -> Iterator[T]:
        """``found`` without repeats (SCAN and HSCAN may repeat an element)."""
        seen: set[bytes] = set()
        try:
            for item in found:
                if key(item) not in seen:
                    seen.add(key(item))
                    yield item
        except RedisError as err:
            raise RedisLayerError(f"Redis at {self.location} failed: {err}") from err

    def used_memory(self) -> tuple[int, int]:
        """``(used_memory_dataset summed over the masters, round trips)``."""
        started = time.perf_counter()
        try:
            if self.cluster:
                info = self.client.info("memory", target_nodes=RedisCluster.PRIMARIES)
                sections = [info] if "used_memory" in info else list(info.values())
            else:
                sections = [self.client.info("memory")]
        except RedisError as err:
            raise RedisLayerError(f"Redis at {self.location} failed: {err}") from err
        self.round_trips += len(sections)
        self._waited(time.perf_counter() - started, len(sections))
        return sum(int(section["used_memory_dataset"]) for section in sections), len(sections)
