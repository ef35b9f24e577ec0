"""Connecting to Redis, for every component that keeps state there (the
frontier's store, the content-seen sets, the seed queue): a single Redis or
any node of a Redis Cluster behind one ``REDIS_URL``, retries with
back-off that are logged, passwords kept out of messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import ResponseError
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
    """redis-py's retry with exponential back-off, logging every failure so
    that an unreachable Redis mid-crawl is never a silent stall."""

    def __init__(self, location: str, retries: int) -> None:
        super().__init__(ExponentialBackoff(cap=2.0, base=0.1), retries)
        self.location = location
        # failed attempts so far: a retried command may have run twice (a
        # time-out after the server ran it), which callers may have to repair
        self.failures = 0

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


def is_cluster(client: Any) -> bool:
    """Whether ``client`` (from :func:`connect`) talks to a Redis Cluster,
    where a command or script may only touch keys of one slot."""
    return isinstance(client, RedisCluster)


def connect(url: str, timeout: float, retry: Retry) -> Any:
    """A client for ``url``: a cluster client if the server is a cluster node.
    Raises redis' errors (or ValueError) when it cannot connect."""
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
