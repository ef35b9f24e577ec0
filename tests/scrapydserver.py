"""A real scrapyd on loopback, and ``scrapyd-deploy`` to it, for end-to-end tests.

:class:`ScrapydServer` runs ``scrapyd`` as a subprocess in a directory of its
own (its ``scrapyd.conf``, eggs, logs, items and databases all there), on a
free ``127.0.0.1`` port, and stops it with the crawls it started.
:func:`deploy_project` copies the project as a user's checkout would be and
runs ``scrapyd-deploy`` from the copy. Neither scrapyd nor its crawls see
the project root: ``PYTHONPATH`` and ``SCRAPY_*`` variables are removed from
their environment, so the code they run comes from the deployed egg alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from testweb.waiting import NoProgress, wait_until

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
#: polls (0.1 s apart) without scrapyd writing a byte before giving up on its start
START_POLLS = 300
#: polls (0.5 s apart) without the job's state or files moving before giving up on it
JOB_PATIENCE = 120
STOP_TIMEOUT = 15.0
# what a copy of the project leaves out: what a fresh checkout does not have
COPY_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "out", "jobs", "build", "*.egg-info", "__pycache__", ".hypothesis",
    ".pytest_cache", "*.log")

CONFIG = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {workdir}/eggs
logs_dir = {workdir}/logs
items_dir = {workdir}/items
dbs_dir = {workdir}/dbs
jobs_to_keep = 5
max_proc = 1
poll_interval = 0.2
"""


class ScrapydError(RuntimeError):
    """scrapyd did not start, or answered an API call with an error."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def isolated_env() -> dict[str, str]:
    """This environment without what would let a process find the project root."""
    return {name: value for name, value in os.environ.items()
            if name != "PYTHONPATH" and not name.startswith("SCRAPY")}


class ScrapydServer:
    """A running scrapyd; a context manager that stops it (and its crawls) on exit."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        (self.workdir / "scrapyd.conf").write_text(CONFIG.format(port=self.port, workdir=self.workdir))
        self.output = self.workdir / "scrapyd.out"
        with open(self.output, "wb") as out:
            # its own session, so that stop() also ends the crawls it spawned
            self.process = subprocess.Popen(
                [str(BIN / "scrapyd")], cwd=self.workdir, env=isolated_env(),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def _wait_until_up(self) -> None:
        def up() -> bool:
            if self.process.poll() is not None:
                raise ScrapydError(f"scrapyd exited with {self.process.returncode}:\n{self.log()}")
            try:
                return self.get("daemonstatus.json")["status"] == "ok"
            except OSError:
                return False

        try:
            # what scrapyd writes while it starts is its progress
            wait_until(up, "answer from scrapyd", lambda: self.output.stat().st_size, patience=START_POLLS,
                       interval=0.1)
        except NoProgress as err:
            raise ScrapydError(f"{err}:\n{self.log()}") from err

    def log(self) -> str:
        return self.output.read_text(errors="replace") if self.output.exists() else ""

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self._call(urllib.request.Request(self.url + endpoint + query))

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        """POST form ``fields`` (a list, so that a name such as ``setting`` repeats)."""
        body = urllib.parse.urlencode(fields).encode()
        return self._call(urllib.request.Request(self.url + endpoint, data=body))

    def _call(self, request: urllib.request.Request) -> dict[str, Any]:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        if answer.get("status") != "ok":
            raise ScrapydError(f"{request.full_url}: {answer}")
        return answer

    def schedule(self, project: str, spider: str, settings: dict[str, Any],
                 spider_args: dict[str, str]) -> str:
        """Queue a crawl through ``schedule.json``; its job id."""
        fields = [("project", project), ("spider", spider)]
        fields += [("setting", f"{name}={value}") for name, value in settings.items()]
        fields += list(spider_args.items())
        return self.post("schedule.json", fields)["jobid"]

    def wait_for_job(self, project: str, job: str) -> dict[str, Any]:
        """The job's ``listjobs.json`` entry once it is finished; bounded by
        the job's progress (its state, what scrapyd and the crawl write):
        :class:`~testweb.waiting.NoProgress` once nothing moved for a long run of polls."""
        found: dict[str, Any] = {}

        def finished() -> bool:
            jobs = self.get("listjobs.json", project=project)
            found.update(next((entry for entry in jobs["finished"] if entry["id"] == job), {}))
            found["states"] = [state for state in ("pending", "running", "finished")
                               if any(entry["id"] == job for entry in jobs[state])]
            return "id" in found

        def progress() -> tuple[Any, ...]:
            written = sum(path.stat().st_size for path in self.workdir.rglob("*") if path.is_file())
            return tuple(found.get("states", ())), written

        wait_until(finished, f"end of scrapyd job {job}", progress, patience=JOB_PATIENCE, interval=0.5)
        del found["states"]
        return found

    def job_file(self, kind: str, project: str, spider: str, job: str) -> Path:
        """``logs`` or ``items`` file of a job, where scrapyd.conf puts them."""
        extension = {"logs": "log", "items": "jl"}[kind]
        return self.workdir / kind / project / spider / f"{job}.{extension}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        try:  # a crawl still running in scrapyd's session
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> ScrapydServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


def deploy_project(workdir: Path, url: str, version: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Copy the project to ``workdir`` and ``scrapyd-deploy`` it to ``url``.

    The copy's ``scrapy.cfg`` is the committed one plus a ``[deploy:e2e]``
    target for ``url`` (which inherits the project name from ``[deploy]``).
    Returns the finished ``scrapyd-deploy`` and the copy's path.
    """
    source = Path(workdir) / "project"
    shutil.copytree(ROOT, source, ignore=COPY_IGNORE)
    with open(source / "scrapy.cfg", "a") as cfg:
        cfg.write(f"\n[deploy:e2e]\nurl = {url}\n")
    proc = subprocess.run(
        [str(BIN / "scrapyd-deploy"), "e2e", "--version", version],
        cwd=source, env=isolated_env(), capture_output=True, text=True, timeout=120)
    return proc, source
