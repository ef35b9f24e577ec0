"""Running ``scrapy crawl web`` as a subprocess, the way a user does.

End-to-end tests call :func:`run_web_crawl` with a running synthetic web
(:mod:`testweb`) and read back what the crawl produced: its exit code,
its items (``-O``), its final stats (``PROGRESS_REPORT_FILE``) and its log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))


@dataclass
class CrawlResult:
    returncode: int
    items: list[dict[str, Any]]
    report: dict[str, Any]
    log: str
    workdir: Path
    command: list[str] = field(default_factory=list)

    @property
    def stats(self) -> dict[str, Any]:
        return self.report.get("stats", {})


def crawl_command(
    workdir: Path,
    seeds: str,
    settings: dict[str, Any] | None = None,
    spider_args: dict[str, str] | None = None,
    robots_overrides: bool = True,
) -> list[str]:
    """The ``scrapy crawl web`` command line with items, report and log in
    ``workdir``; no ``-a seeds`` when ``seeds`` is empty. ``robots_overrides``
    false keeps the default ROBOTSTXT_RETRY_DELAY and
    ROBOTSTXT_UNREACHABLE_PERIOD (a test of the crawler as users run it)."""
    cmd = [SCRAPY, "crawl", "web", "-O", str(workdir / "items.jsonl")]
    if seeds:
        cmd[3:3] = ["-a", f"seeds={seeds}"]
    for name, value in (spider_args or {}).items():
        cmd += ["-a", f"{name}={value}"]
    # the test web's last regular host answers robots.txt with 503: retry
    # it quickly and give up (no restrictions) after a second, not 30 days
    robots = {"ROBOTSTXT_RETRY_DELAY": 0.2, "ROBOTSTXT_UNREACHABLE_PERIOD": 1.0}
    merged = {
        "PROGRESS_REPORT_FILE": workdir / "report.json",
        "LOG_FILE": workdir / "crawl.log",
        "LOG_LEVEL": "INFO",
        **(robots if robots_overrides else {}),
        "ALLOW_PRIVATE_ADDRESSES": True,  # the test webs are on loopback
        **(settings or {}),
    }
    for name, value in merged.items():
        cmd += ["-s", f"{name}={value}"]
    return cmd


def read_result(workdir: Path, returncode: int, command: list[str]) -> CrawlResult:
    items_file, report_file, log_file = (
        workdir / "items.jsonl", workdir / "report.json", workdir / "crawl.log")
    items = []
    if items_file.exists():
        items = [json.loads(line) for line in items_file.read_text().splitlines() if line.strip()]
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    return CrawlResult(returncode, items, report, log, workdir, command)


def run_web_crawl(
    workdir: Path,
    seeds: str,
    settings: dict[str, Any] | None = None,
    spider_args: dict[str, str] | None = None,
    timeout: float = 240.0,
    robots_overrides: bool = True,
) -> CrawlResult:
    """Run one crawl to completion (bounded by ``timeout``) and collect its output."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = crawl_command(workdir, seeds, settings, spider_args, robots_overrides)
    proc = subprocess.run(
        command, cwd=ROOT, env=dict(os.environ), timeout=timeout,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    (workdir / "stdout.txt").write_bytes(proc.stdout)
    result = read_result(workdir, proc.returncode, command)
    if not result.log:
        result.log = proc.stdout.decode(errors="replace")
    return result


def start_web_crawl(
    workdir: Path,
    seeds: str,
    settings: dict[str, Any] | None = None,
    spider_args: dict[str, str] | None = None,
    robots_overrides: bool = True,
) -> subprocess.Popen[bytes]:
    """Start a crawl in the background (for kill and resume tests)."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = crawl_command(workdir, seeds, settings, spider_args, robots_overrides)
    out = open(workdir / "stdout.txt", "ab")
    return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def kill_crawl(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to the crawl and wait for it to end."""
    proc.send_signal(sig)
    return proc.wait(timeout=60)
