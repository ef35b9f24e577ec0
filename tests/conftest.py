"""Shared fixtures: the real parts from :mod:`testweb` (the synthetic test
web and ``redis-server``, started as subprocesses)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from testweb.model import canonical_url
from testweb.redisserver import RedisClusterServers, RedisServer, shared_cluster, shared_server


@pytest.fixture
def start_web(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Start a synthetic web of its own for this test (own access log)."""
    from testweb import WebConfig, start_testweb  # noqa: PLC0415
    with ExitStack() as stack:

        def start(**config: Any) -> Any:
            workdir = tmp_path / f"web{len(stack._exit_callbacks)}"
            return stack.enter_context(start_testweb(WebConfig(**config), workdir))

        yield start


def fetched_urls(web: Any, include_robots: bool = False) -> Counter[str]:
    """The test web's documents it served, by its canonical URL (any
    spelling the crawler sent counts for its document), with counts."""
    counts: Counter[str] = Counter()
    for entry in web.entries():
        if not include_robots and entry.path == "/robots.txt":
            continue
        counts[canonical_url(f"http://{entry.host}:{web.port}{entry.path}")] += 1
    return counts


@pytest.fixture(scope="session")
def realweb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """nginx serving real documentation sites under their real names
    (:mod:`testweb.realweb`), once per session: starting it makes a key and
    a certificate. A missing part fails the test with the fix."""
    from testweb.realweb import MissingTool, start_realweb  # noqa: PLC0415
    try:
        with start_realweb(tmp_path_factory.mktemp("realweb")) as web:
            yield web
    except MissingTool as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def redis_server() -> RedisServer:
    """One single-instance Redis for the session (RDB and AOF off)."""
    return shared_server()


@pytest.fixture(scope="module")
def paused_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis of the module's own, for probes that pause it (``CLIENT
    PAUSE``): the pause must not stall other tests' server."""
    with RedisServer(tmp_path_factory.mktemp("redis-pause")) as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster() -> RedisClusterServers:
    """One local 3-master Redis Cluster for the session."""
    return shared_cluster()


@pytest.fixture
def redis_aof_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own with AOF on (appendfsync everysec), to crash."""
    with RedisServer(tmp_path / "redis-aof", appendonly=True) as server:
        yield server
