"""Deploying to a real scrapyd and crawling through its HTTP API.

A user's steps, once per module: start scrapyd on loopback, ``scrapyd-deploy``
the project, ``schedule.json`` the ``web`` spider with spider arguments and
``setting=`` overrides, wait in ``listjobs.json`` until the job has finished.
The tests then read the synthetic web's access log and the job's log, items
and report. scrapyd and its crawl run in their own directory with no path to
the project root, so everything they run comes from the egg.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testweb import WebConfig, start_testweb
from tests.conftest import fetched_urls
from tests.scrapydserver import ScrapydServer, deploy_project, isolated_env

PROJECT = "webcrawler"
VERSION = "e2e-1"
DEPTH = 2


@dataclass
class Deployment:
    web: Any
    scrapyd: ScrapydServer
    deploy_output: str
    deploy_returncode: int
    job: str
    finished: dict[str, Any]
    workdir: Path

    def job_log(self) -> str:
        return self.scrapyd.job_file("logs", PROJECT, "web", self.job).read_text(errors="replace")

    def items(self) -> list[dict[str, Any]]:
        lines = self.scrapyd.job_file("items", PROJECT, "web", self.job).read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def report(self) -> dict[str, Any]:
        return json.loads((self.workdir / "report.json").read_text())


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("scrapyd")
    config = WebConfig(hosts=4, pages=6, links=4, seed=5, slow_delay=0.2, big_page_mb=0.5)
    with start_testweb(config, tmp / "web") as web, ScrapydServer(tmp / "scrapyd") as scrapyd:
        deployed, _ = deploy_project(tmp / "deploy", scrapyd.url, VERSION)
        job = ""
        finished: dict[str, Any] = {}
        if deployed.returncode == 0:
            job = scrapyd.schedule(PROJECT, "web", settings={
                "DNS_HOSTS": web.hosts_file,
                "ALLOW_PRIVATE_ADDRESSES": True,  # the test web is on loopback
                "DEPTH_LIMIT": DEPTH,
                "ROBOTSTXT_RETRY_DELAY": 0.2,
                "ROBOTSTXT_UNREACHABLE_PERIOD": 1,
                "CONTENTSEEN_ENABLED": False,  # the truth follows copies' links
                "CONCURRENT_REQUESTS": 16,
                "LOG_LEVEL": "INFO",
                "PROGRESS_REPORT_FILE": tmp / "report.json",
            }, spider_args={"seeds": ",".join(web.model.seeds)})
            finished = scrapyd.wait_for_job(PROJECT, job)
        yield Deployment(web, scrapyd, deployed.stdout + deployed.stderr, deployed.returncode,
                         job, finished, tmp)


def test_scrapyd_deploy_uploads_the_project_with_its_spider(deployment: Deployment) -> None:
    assert deployment.deploy_returncode == 0, deployment.deploy_output
    answer = json.loads(deployment.deploy_output[deployment.deploy_output.index("{"):].splitlines()[0])
    assert answer["status"] == "ok" and answer["project"] == PROJECT
    assert answer["version"] == VERSION and answer["spiders"] == 1
    scrapyd = deployment.scrapyd
    assert scrapyd.get("listprojects.json")["projects"] == [PROJECT]
    assert scrapyd.get("listversions.json", project=PROJECT)["versions"] == [VERSION]
    assert scrapyd.get("listspiders.json", project=PROJECT)["spiders"] == ["web"]


def test_scheduled_crawl_finishes_cleanly(deployment: Deployment) -> None:
    assert deployment.finished["id"] == deployment.job
    log = deployment.job_log()
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert deployment.report()["finish_reason"] == "finished"


def test_crawl_runs_our_components_from_the_egg(deployment: Deployment) -> None:
    """The crawl's process had no path to the project: the settings module,
    the add-on and every component it enables were loaded from the egg."""
    log = deployment.job_log()
    assert "Overridden settings" in log and "'BOT_NAME': 'webcrawler'" in log
    assert "extensions.addon.WebcrawlerAddon" in log
    assert "Frontier closed (finished)" in log
    assert "extensions.robots.middleware.RobotsMiddleware" in log
    assert "extensions.pipelines.links.LinkScheduler" in log
    assert deployment.report()["stats"]["frontier/enqueued"] > 0
    # and nothing but the egg could have provided them
    outside = subprocess.run(
        [sys.executable, "-c", "import crawler"], cwd=deployment.scrapyd.workdir,
        env=isolated_env(), capture_output=True, text=True)
    assert "No module named 'crawler'" in outside.stderr


def test_crawl_fetches_exactly_what_the_synthetic_web_truth_says(deployment: Deployment) -> None:
    """The setting overrides arrived: DNS_HOSTS led to the loopback web,
    DEPTH_LIMIT bounded the crawl, robots.txt was asked for on every host."""
    web = deployment.web
    truth = web.truth(depth_limit=DEPTH, robots_5xx="allow")
    fetched = fetched_urls(web)
    assert set(truth.regular) <= set(fetched) <= set(truth.fetched), sorted(
        set(truth.regular) - set(fetched))[:20]
    robots_hosts = {entry.host for entry in web.entries() if entry.path == "/robots.txt"}
    assert {url.split("/")[2].split(":")[0] for url in fetched} <= robots_hosts


def test_items_go_to_scrapyd_items_dir(deployment: Deployment) -> None:
    items = deployment.items()
    assert {item["url"] for item in items} >= set(deployment.web.model.seeds)
    assert len(items) == deployment.report()["stats"]["item_scraped_count"]
    assert all(item["depth"] <= DEPTH for item in items)
