"""Starting the synthetic web's server as a subprocess from Python.

A subprocess, not a thread: the server gets its own core and event loop, so
it never competes with the crawler under test for the GIL.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from testweb.model import SiteModel, WebConfig, canonical_url
from testweb.server import FLUSH_PATH, RESET_PATH, Entry, read_access_log
from testweb.trapweb import TrapWeb, TrapWebConfig
from testweb.truth import Truth, compute_truth, fetch_robots

ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT = 10.0


class TestWeb:
    """A running server; a context manager that stops it on exit."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, config: WebConfig | TrapWebConfig, workdir: Path) -> None:
        self.config = config
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "testweb", "serve", "--port", "0",
                   "--workdir", str(self.workdir), *config.cli_args()]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        self.port = self._read_port()
        self.model = (TrapWeb(config, self.port) if isinstance(config, TrapWebConfig)
                      else SiteModel(config, self.port))

    def _read_port(self) -> int:
        """Block until the server says ``listening PORT`` (or dies)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("listening "):
                return int(line.split()[1])
        code = self.process.wait()
        raise RuntimeError(f"testweb server exited with {code} before listening")

    @property
    def hosts_file(self) -> Path:
        return self.workdir / "hosts"

    @property
    def seeds_file(self) -> Path:
        return self.workdir / "seeds.txt"

    @property
    def access_log(self) -> Path:
        return self.workdir / "access.log"

    def url(self, host: str, path: str = "/") -> str:
        return self.model.url(host, path)

    def robots_hosts(self) -> list[str]:
        """The ``robots-<variant>.test`` hosts (:mod:`testweb.robots_hosts`);
        linked from nowhere, in the hosts file, seeded by the tests that want them."""
        return list(self.model.robots_hosts)

    def powerlaw_seeds(self) -> list[str]:
        """Canonical seed URLs of the power-law hosts (:mod:`testweb.powerlaw`)."""
        from testweb import powerlaw  # noqa: PLC0415 - only importance runs need it

        return [canonical_url(self.url(powerlaw.node_host(n), powerlaw.node_path(n)))
                for n in powerlaw.seed_nodes(self.config.powerlaw_pages)]

    def powerlaw_graph(self) -> dict[str, list[str]]:
        """The power-law link graph as canonical URL -> canonical out-link URLs
        (empty unless ``powerlaw_pages`` > 0)."""
        from testweb import powerlaw  # noqa: PLC0415

        config = self.config
        graph = powerlaw.build_graph(config.seed, config.powerlaw_pages, config.links)
        urls = [canonical_url(self.url(powerlaw.node_host(n), powerlaw.node_path(n)))
                for n in range(len(graph))]
        return {urls[node]: [urls[t] for t in targets] for node, targets in enumerate(graph)}

    def flush(self) -> None:
        """Make the access log on disk hold every response completed so far."""
        self._control(FLUSH_PATH)

    def reset(self) -> None:
        """Forget the server's state: robots-flaky.test answers 503 again."""
        self._control(RESET_PATH)

    def _control(self, path: str) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", path, headers={"Host": "h0000.test"})
            connection.getresponse().read()
        finally:
            connection.close()

    def entries(self) -> list[Entry]:
        self.flush()
        return read_access_log(self.access_log)

    def truth(self, depth_limit: int = 10, robots_5xx: str = "allow",
              follow_nofollow: bool = False, seeds: list[str] | None = None) -> Truth:
        """What a correct crawl fetches from ``seeds`` (default: the web's seeds;
        ``[web.url("robots-bom.test")]`` for one robots host); ``robots_5xx``
        (``allow`` or ``disallow``) is the policy for a robots.txt that answers 5xx."""
        return compute_truth(self.model, seeds, depth_limit, robots_5xx, follow_nofollow)

    def crawl_delays(self, user_agent: str = "webcrawler") -> dict[str, float]:
        """Host -> the Crawl-delay its robots.txt gives ``user_agent`` (hosts with one)."""
        from protego import Protego  # noqa: PLC0415 - only politeness tests need it

        delays = {}
        for host in self.model.hosts:
            fetch = fetch_robots(self.model, host)
            if fetch.text:
                delay = Protego.parse(fetch.text).crawl_delay(user_agent)
                if delay:
                    delays[host] = float(delay)
        return delays

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()

    def __enter__(self) -> TestWeb:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


def start_testweb(config: WebConfig | TrapWebConfig, workdir: Path) -> TestWeb:
    """Start the server for ``config`` with its files in ``workdir``."""
    return TestWeb(config, workdir)
