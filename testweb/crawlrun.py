"""Running a crawl as a subprocess, the way a user does.

Two kinds of crawl, one result type:

* ``scrapy crawl web`` in the project (:func:`run_web_crawl`,
  :func:`start_web_crawl`): items (``-O``), final stats
  (``PROGRESS_REPORT_FILE``) and log (``LOG_FILE``) in the run's directory,
  stdout in ``stdout.txt``;
* ``scrapy runspider FILE`` from the run's directory (:func:`run_spider`,
  :func:`start_spider`), so the project's settings do not apply, with
  ``PYTHONPATH`` pointing at the repository: a test's own spider, or stock
  Scrapy for comparison. Its output is the log (``crawl.log``).

:func:`read_result` reads back what a crawl produced (:class:`CrawlResult`);
:func:`kill_crawl` ends a background one. Tests, ``make demo`` and the
benchmarks that need no measurement of the process itself use this module.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
STOP_TIMEOUT = 60.0


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
        """The final stats from the progress report (``scrapy crawl web`` only)."""
        return self.report.get("stats", {})

    def dumped_stat(self, key: str) -> Any:
        """A value from Scrapy's "Dumping Scrapy stats" block in the log, or None."""
        match = re.search(r"'%s': ([^,}\n]+)" % re.escape(key), self.log)
        return None if match is None else ast.literal_eval(match.group(1))


class CrawlHung(AssertionError):
    """A crawl subprocess still running at its last-resort time-out (killed)."""

    @classmethod
    def of(cls, command: list[str], timeout: float, log: Path | None, output: bytes | None) -> CrawlHung:
        """The error for ``command``, with the end of its log (or output)."""
        text = (output or b"").decode(errors="replace")
        if log is not None and log.exists():
            text = log.read_text(errors="replace")
        return cls(f"the crawl did not end within {timeout:.0f} s, the last resort against a hang "
                   f"(a hung crawl, or a machine far slower than any test expects); it was killed.\n"
                   f"command: {' '.join(command)}\nlast lines of its log:\n{text[-3000:]}")


def crawl_command(
    workdir: Path,
    seeds: str,
    settings: dict[str, Any] | None = None,
    spider_args: dict[str, str] | None = None,
    robots_overrides: bool = True,
) -> list[str]:
    """The ``scrapy crawl web`` command line with items, report and log in
    ``workdir``; no ``-a seeds`` when ``seeds`` is empty. ``robots_overrides``
    false keeps the default ROBOTSTXT_RETRY_DELAY,
    ROBOTSTXT_UNREACHABLE_PERIOD and PUSHBACK_BACKOFF_DELAY (a test of the
    crawler as users run it)."""
    cmd = [SCRAPY, "crawl", "web", "-O", str(workdir / "items.jsonl")]
    if seeds:
        cmd[3:3] = ["-a", f"seeds={seeds}"]
    for name, value in (spider_args or {}).items():
        cmd += ["-a", f"{name}={value}"]
    # the test web's last regular host answers robots.txt with 503: retry
    # it quickly and give up (no restrictions) after a second, not 30 days;
    # special.test's /error/503.html always answers 503 (no Retry-After):
    # its host's pauses are short
    robots = {"ROBOTSTXT_RETRY_DELAY": 0.2, "ROBOTSTXT_UNREACHABLE_PERIOD": 1.0, "PUSHBACK_BACKOFF_DELAY": 0.2}
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


def spider_command(spider: Path | str, spider_args: dict[str, str] | None = None,
                   settings: dict[str, Any] | None = None) -> list[str]:
    """The ``scrapy runspider`` command line; dict and list settings as JSON."""
    command = [SCRAPY, "runspider", str(spider)]
    for name, value in (spider_args or {}).items():
        command += ["-a", f"{name}={value}"]
    for name, value in {"LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False, **(settings or {})}.items():
        text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        command += ["-s", f"{name}={text}"]
    return command


def spider_env() -> dict[str, str]:
    """The environment of a ``runspider`` crawl: the repository importable."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


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
    """Run one ``scrapy crawl web`` to completion and collect its output.
    ``timeout`` is the last resort against a hang (:class:`CrawlHung`), far
    above what the crawl needs on a slow machine: no test judges speed by it."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = crawl_command(workdir, seeds, settings, spider_args, robots_overrides)
    try:
        proc = subprocess.run(
            command, cwd=ROOT, env=dict(os.environ), timeout=timeout,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
    except subprocess.TimeoutExpired as err:
        raise CrawlHung.of(command, timeout, workdir / "crawl.log", err.output) from err
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
    """Start a ``scrapy crawl web`` in the background (for kill and resume tests)."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = crawl_command(workdir, seeds, settings, spider_args, robots_overrides)
    with open(workdir / "stdout.txt", "ab") as out:
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def run_spider(workdir: Path, spider: Path | str, spider_args: dict[str, str] | None = None,
               settings: dict[str, Any] | None = None, timeout: float = 120.0,
               preexec_fn: Callable[[], Any] | None = None) -> CrawlResult:
    """``scrapy runspider spider`` from ``workdir`` to completion; its output
    is the result's log. ``timeout`` as for :func:`run_web_crawl`."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = spider_command(spider, spider_args, settings)
    try:
        proc = subprocess.run(command, cwd=workdir, env=spider_env(), timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired as err:
        raise CrawlHung.of(command, timeout, None, err.output) from err
    (workdir / "crawl.log").write_bytes(proc.stdout)
    return read_result(workdir, proc.returncode, command)


def start_spider(workdir: Path, spider: Path | str, spider_args: dict[str, str] | None = None,
                 settings: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    """Start ``scrapy runspider spider`` in the background, output to
    ``workdir/crawl.log`` (:func:`read_result` reads it after the end)."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = spider_command(spider, spider_args, settings)
    with open(workdir / "crawl.log", "ab") as out:
        return subprocess.Popen(command, cwd=workdir, env=spider_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def kill_crawl(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to the crawl and wait for it to end."""
    proc.send_signal(sig)
    return proc.wait(timeout=STOP_TIMEOUT)
