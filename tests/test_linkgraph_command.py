"""``scrapy linkgraph``: the compressed graph of a real crawl, queried by URL.

One crawl of the test web with ``JOBDIR`` (as in test_linkgraph_record,
whose ground truth gives every page's links exactly), then the command as a
subprocess from the project root, as a user runs it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extensions.frontier.fingerprint import url_fingerprint
from extensions.linkgraph.build import read_report
from extensions.linkgraph.graph import LinkGraph
from extensions.linkgraph.service import up_to_date_graph
from extensions.frontier.store import Entry
from extensions.backends.sqlite.store import SQLiteStore
from testweb import WebConfig, start_testweb
from testweb.crawlrun import ROOT, SCRAPY, kill_crawl, run_web_crawl, start_web_crawl
from testweb.waiting import CrawlActivity, ended, wait_until
from tests.test_linkgraph_record import WEB, TruthLinks, crawl_settings, sqlite_graph


def linkgraph(*args: str, **settings: Any) -> subprocess.CompletedProcess[str]:
    command = [SCRAPY, "linkgraph", *args]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any], Path]]:
    """(web, settings, JOBDIR) of one finished crawl whose graph is built."""
    tmp = tmp_path_factory.mktemp("linkgraph")
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        settings = crawl_settings(web, JOBDIR=tmp / "job")
        result = run_web_crawl(tmp / "crawl", str(web.seeds_file), settings)
        assert result.returncode == 0, result.log[-3000:]
        yield web, settings, tmp / "job"


def url_rows(job: Path) -> dict[int, tuple[str, int]]:
    rows, _ = sqlite_graph(job)
    return {url_fingerprint(url)[0]: (url, depth) for url, (_, depth) in rows.items()}


def test_stats_report_the_graph_of_every_recorded_page(crawl: Any) -> None:
    _, _, job = crawl
    run = linkgraph("stats", JOBDIR=job)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)
    _, links = sqlite_graph(job)
    assert stats["pages"] == len(links) > 50
    assert stats["nodes"] >= len(links) and stats["arcs"] > 2 * len(links)
    assert 0 < stats["bits_per_link"] < 32 and 0 < stats["bits_per_link_transposed"] < 32
    assert stats["graph_bytes"] < stats["uncompressed_bytes"]
    assert stats["aopic_pages"] > 50 and -1.0 <= stats["aopic_spearman"] <= 1.0


def test_the_graph_is_every_recorded_edge_and_the_test_webs_links(crawl: Any) -> None:
    """Exported edges = recorded lists by URL (targets without a URL row
    counted, not named); each page's out-links = its ground-truth links."""
    web, settings, job = crawl
    out = job.parent / "edges.txt"
    run = linkgraph("export", str(out), JOBDIR=job)
    assert run.returncode == 0, run.stderr
    exported = {tuple(line.split(" ")) for line in out.read_text().splitlines()}
    rows = url_rows(job)
    _, links = sqlite_graph(job)
    recorded = {(rows[source][0], rows[target][0])
                for source, targets in links.items() for target in targets if target in rows}
    unnamed = sum(target not in rows for targets in links.values() for target in targets)
    assert exported == recorded
    assert read_report(job / "linkgraph").unresolved_targets == unnamed
    truth, graph = TruthLinks(web, settings), LinkGraph(job / "linkgraph")
    try:
        for source in links:
            url, depth = rows[source]
            expected = {rows[fp][0] for fp in truth.of(url, depth) if fp in rows}
            assert set(graph.out_links(url)) == expected, url
    finally:
        graph.close()


def test_out_and_in_agree_for_every_edge(crawl: Any) -> None:
    _, _, job = crawl
    graph = LinkGraph(job / "linkgraph")
    try:
        urls = [graph.url_of(node) for node in range(graph.graph.num_nodes())]
        out = {url: set(graph.out_links(url)) for url in urls}
        into = {url: set(graph.in_links(url)) for url in urls}
        assert {(s, t) for s in urls for t in out[s]} == {(s, t) for t in urls for s in into[t]}
        assert sum(map(len, out.values())) == graph.graph.num_arcs()
        page = max(urls, key=lambda url: len(out[url]) + len(into[url]))
    finally:
        graph.close()
    run_out, run_in = linkgraph("out", page, JOBDIR=job), linkgraph("in", page, JOBDIR=job)
    assert run_out.returncode == run_in.returncode == 0, run_out.stderr + run_in.stderr
    assert set(run_out.stdout.splitlines()) == out[page] and set(run_in.stdout.splitlines()) == into[page]


def test_a_url_not_in_the_graph_is_an_error(crawl: Any) -> None:
    _, _, job = crawl
    run = linkgraph("out", "http://nowhere.test/", JOBDIR=job)
    assert run.returncode != 0 and run.stdout == ""
    assert "not in the link graph: http://nowhere.test/" in run.stderr
    assert linkgraph("in", "not a url", JOBDIR=job).returncode != 0


def test_pagerank_prints_the_top_pages_best_first_with_the_aopic_correlation(crawl: Any) -> None:
    _, _, job = crawl
    run = linkgraph("pagerank", "--top", "7", JOBDIR=job)
    assert run.returncode == 0, run.stderr
    lines = [line.split(" ", 1) for line in run.stdout.splitlines()]
    scores = [float(score) for score, _ in lines]
    assert len(lines) == 7 and scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    graph = LinkGraph(job / "linkgraph")
    try:
        best = graph.url_of(int(graph.pagerank().argmax()))
        assert lines[0][1] == best
        assert all(graph.node_of(url) >= 0 for _, url in lines)
    finally:
        graph.close()
    assert "Spearman rho, AOPIC history vs PageRank" in run.stderr


def test_usage_errors_name_what_is_wrong(crawl: Any) -> None:
    _, _, job = crawl
    assert "say what to do" in linkgraph("graph", JOBDIR=job).stderr
    assert "takes 1 argument" in linkgraph("out", JOBDIR=job).stderr
    nothing = linkgraph("stats")
    assert nothing.returncode != 0 and "JOBDIR" in nothing.stderr
    missing = linkgraph("stats", JOBDIR=job.parent / "no-such-job")
    assert missing.returncode != 0 and "no frontier database" in missing.stderr


def test_the_command_only_reads_the_crawls_store(crawl: Any) -> None:
    _, _, job = crawl
    before = hashlib.sha256((job / "frontier.sqlite3").read_bytes()).hexdigest()
    assert linkgraph("stats", "--rebuild", JOBDIR=job).returncode == 0
    assert hashlib.sha256((job / "frontier.sqlite3").read_bytes()).hexdigest() == before


def test_a_graph_is_rebuilt_when_the_crawl_recorded_more_pages(tmp_path: Path) -> None:
    urls = {url: url_fingerprint(url)[0] for url in ("http://a.test/a", "http://a.test/b", "http://a.test/c")}
    a, b, c = urls.values()
    store = SQLiteStore(tmp_path / "job" / "frontier.sqlite3")
    store.open()
    try:
        store.urls.insert_new([Entry(fp, url, "a.test") for url, fp in urls.items()], 0.0)
        store.links.record(a, [b])
        store.checkpoint()
        settings = {"JOBDIR": str(tmp_path / "job")}
        first = up_to_date_graph(settings)
        assert (first.graph.num_nodes(), first.graph.num_arcs()) == (2, 1)
        first.close()
        store.links.record(b, [c, a])
        store.checkpoint()
        second = up_to_date_graph(settings)
        assert (second.graph.num_nodes(), second.graph.num_arcs()) == (3, 3)
        assert second.in_links("http://a.test/a") == ["http://a.test/b"]
        second.close()
    finally:
        store.close()


def test_a_running_crawl_can_be_queried(tmp_path: Path, start_web: Any) -> None:
    """The store is read while the crawl writes it (SQLite WAL readers);
    the crawl goes on to finish, and a later query sees the whole graph."""
    web = start_web(**WEB)
    job = tmp_path / "job"
    settings = crawl_settings(web, JOBDIR=job, DOWNLOAD_DELAY=0.05)
    proc = start_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings)
    try:
        wait_until(lambda: len(web.entries()) >= 30 or ended([proc]), "30 fetches",
                   CrawlActivity([tmp_path / "crawl"], also=lambda: len(web.entries())))
        assert proc.poll() is None, "the crawl ended before it could be queried"
        early = linkgraph("stats", JOBDIR=job)
        assert early.returncode == 0, early.stderr
        assert proc.wait(timeout=300) == 0
    finally:
        if proc.poll() is None:
            kill_crawl(proc)
    report = json.loads((tmp_path / "crawl" / "report.json").read_text())
    assert report["stats"]["finish_reason"] == "finished"
    late = json.loads(linkgraph("stats", JOBDIR=job).stdout)
    assert 0 < json.loads(early.stdout)["pages"] < late["pages"] == len(sqlite_graph(job)[1])


@pytest.fixture(scope="module")
def redis_crawl(tmp_path_factory: pytest.TempPathFactory, redis_server: Any) -> Iterator[tuple[Any, ...]]:
    """(web, settings, result, the Redis settings) of one finished crawl on
    Redis, its keys kept (the default URL-seen set: finished URLs have no row)."""
    from testweb.redisserver import unique_prefix  # noqa: PLC0415

    tmp = tmp_path_factory.mktemp("linkgraph-redis")
    redis = {"FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url, "FRONTIER_REDIS_PREFIX": unique_prefix()}
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        settings = crawl_settings(web, SCHEDULER_PERSIST=True, **redis)
        result = run_web_crawl(tmp / "crawl", str(web.seeds_file), settings)
        assert result.returncode == 0, result.log[-3000:]
        yield web, settings, result, redis


def test_on_redis_the_command_reads_the_shared_store(tmp_path: Path, redis_crawl: Any) -> None:
    from testweb.redisserver import unique_prefix  # noqa: PLC0415

    _, _, result, redis = redis_crawl
    run = linkgraph("stats", LINKGRAPH_DIR=tmp_path / "graph", **redis)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)
    assert stats["pages"] == result.stats["linkgraph/pages"] and stats["arcs"] > 2 * stats["pages"]
    assert (tmp_path / "graph" / "graph.graph").is_file()
    gone = linkgraph("stats", LINKGRAPH_DIR=tmp_path / "other", **{**redis, "FRONTIER_REDIS_PREFIX": unique_prefix()})
    assert gone.returncode != 0 and "no crawl at" in gone.stderr


def test_on_redis_the_graph_has_every_ground_truth_edge_between_fetched_pages_by_url(
        tmp_path: Path, redis_crawl: Any) -> None:
    """The segments name every node (fetched pages and finished targets have
    no URL row on Redis): each fetched page's out-links in the exported graph
    are its ground-truth links, all named, and every truth edge between two
    fetched pages is there, its ends named by canonical URLs of those pages
    (a page spelt several ways, as ``?b=2&a=1`` and ``?a=1&b=2``, by one)."""
    from extensions.urls.canonical import canonicalize  # noqa: PLC0415

    web, settings, result, redis = redis_crawl
    out = tmp_path / "edges.txt"
    run = linkgraph("export", str(out), LINKGRAPH_DIR=tmp_path / "graph", **redis)
    assert run.returncode == 0, run.stderr
    exported = [tuple(line.split(" ")) for line in out.read_text().splitlines()]
    assert read_report(tmp_path / "graph").unresolved_targets == 0
    names = {url for edge in exported for url in edge}
    assert all(canonicalize(url) == url for url in names)
    by_fp = {url_fingerprint(url)[0]: url for url in names}
    assert len(by_fp) == len(names)  # one name a node
    edges = {(url_fingerprint(source)[0], url_fingerprint(target)[0]) for source, target in exported}
    fetched = {}  # fingerprint -> (URL, depth) of every page that yielded an item
    for item in result.items:
        url = item.get("final_url") or item["url"]
        fetched[url_fingerprint(url)[0]] = (url, int(item.get("depth") or 0))
    assert len(fetched) > 50
    truth = TruthLinks(web, settings)
    between = set()
    for fp, (url, depth) in fetched.items():
        expected = set(truth.of(url, depth))
        assert {target for source, target in edges if source == fp} == expected, url
        between |= {(by_fp[fp], by_fp[target]) for target in expected if target in fetched}
    assert len(between) > 2 * len(fetched)
    assert between <= set(exported)
