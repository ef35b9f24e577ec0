"""Link segments (:mod:`extensions.linkgraph.segmentlinks`).

The file format with numbers: records back as written, frames at a block
size, files rotated at a size, several OS processes writing one directory
(each its own files, a source's latest record winning), a torn tail skipped
and counted. End to end: a ``scrapy crawl web`` on Redis killed with SIGKILL
leaves segments whose every record is its page's ground-truth links, no link
key in Redis, and ``scrapy linkgraph`` builds the graph from what was
written, a torn frame after it skipped.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from extensions.linkgraph.segmentlinks import SegmentLinkTable
from extensions.linkgraph.segmentlinks import (
    FRAME,
    FRAME_MAGIC,
    MAGIC,
    SegmentScan,
    SegmentWriter,
    latest_records,
    read_segments,
    segment_files,
)
from testweb.crawlrun import ROOT, kill_crawl, start_web_crawl
from testweb.waiting import CrawlActivity, ended, wait_until
from tests.test_linkgraph_command import linkgraph
from tests.test_linkgraph_record import WEB, TruthLinks, crawl_settings, fp_of, redis_keys

EXTREMES = [-(1 << 63), (1 << 63) - 1, 0, -1]


def written(directory: Path) -> list[tuple[int, float, str, list[int]]]:
    return [(r.source, r.when, r.url, r.targets.tolist()) for r in read_segments(directory)]


def test_records_come_back_as_written_in_order(tmp_path: Path) -> None:
    writer = SegmentWriter(tmp_path, identity="p1")
    writer.append(5, 1.5, "http://a.test/", [3, 2, 3 + 0, *EXTREMES])
    writer.append(-7, 2.5, "http://b.test/é", [])
    writer.append(9, 3.5, "", [1])
    writer.close()
    assert written(tmp_path) == [(5, 1.5, "http://a.test/", [3, 2, 3, *EXTREMES]),
                                 (-7, 2.5, "http://b.test/é", []), (9, 3.5, "", [1])]
    assert [path.name for path in segment_files(tmp_path)] == ["links-p1-000001.seg"]
    assert (writer.files, writer.frames, writer.records) == (1, 1, 3)


def test_target_urls_come_back_with_their_targets_and_name_every_node(tmp_path: Path) -> None:
    times = iter([1.0, 2.0, 3.0])
    table = SegmentLinkTable(tmp_path, clock=lambda: next(times))
    table.record(1, [5, 6, 5], "http://a.test/index.html#top", ["http://b.test/5", "http://b.test/6", "http://x/"])
    table.record(6, [1, 7], "http://b.test/6", ["http://a.test/", "http://c.test/line\nbreak"])
    table.record(8, [], "HTTP://D.test:80/")  # a source no record links to: its own URL, canonical
    table.close()
    records = list(read_segments(tmp_path))
    assert [record.target_urls for record in records] == [
        ("http://b.test/5", "http://b.test/6"), ("http://a.test/", "http://c.test/line%0Abreak"), ()]
    assert SegmentLinkTable(tmp_path).node_urls() == {
        1: "http://a.test/", 5: "http://b.test/5", 6: "http://b.test/6", 7: "http://c.test/line%0Abreak",
        8: "http://d.test/"}  # a source linked to is named by the link's canonical URL


def test_target_urls_must_be_one_per_target(tmp_path: Path) -> None:
    writer = SegmentWriter(tmp_path, identity="p1")
    with pytest.raises(ValueError, match="2 targets but 1 target URLs"):
        writer.append(1, 1.0, "http://a.test/", [2, 3], ["http://a.test/2"])


def test_a_frame_is_written_once_a_block_is_pending_and_files_rotate_at_their_size(tmp_path: Path) -> None:
    writer = SegmentWriter(tmp_path, identity="p1", block_bytes=1000, segment_bytes=3000)
    rng = np.random.default_rng(1)
    expected = []
    for source in range(200):
        targets = rng.integers(-(1 << 62), 1 << 62, size=int(rng.integers(0, 20))).tolist()
        writer.append(source, float(source), f"http://h{source % 5}.test/{source}", targets)
        expected.append((source, float(source), f"http://h{source % 5}.test/{source}", targets))
    assert writer.frames > 10 and writer.records > 0  # written without a flush
    writer.close()
    assert writer.records == 200 and writer.files == len(segment_files(tmp_path)) > 3
    assert all(path.stat().st_size < 3000 + 1000 + 2 * FRAME.size for path in segment_files(tmp_path))
    assert written(tmp_path) == expected
    assert sum(path.stat().st_size for path in segment_files(tmp_path)) == writer.bytes_written


def test_abandon_loses_only_the_records_not_yet_flushed(tmp_path: Path) -> None:
    writer = SegmentWriter(tmp_path, identity="p1")
    writer.append(1, 1.0, "http://a.test/1", [2])
    writer.flush()
    writer.append(2, 2.0, "http://a.test/2", [3])
    writer.abandon()
    assert [record[0] for record in written(tmp_path)] == [1]


WRITER = """
import sys
from pathlib import Path
from extensions.linkgraph.segmentlinks import SegmentWriter
directory, number = Path(sys.argv[1]), int(sys.argv[2])
writer = SegmentWriter(directory, block_bytes=200)
for page in range(50):  # its own pages, then page 0 of every process, recorded at time = number
    writer.append(number * 1000 + page, float(page), f"http://p{number}.test/{page}", [number, page])
writer.append(0, float(100 + number), "http://shared.test/", [number])
writer.close()
"""


def test_several_processes_write_files_of_their_own_and_the_latest_record_wins(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(number)], cwd=ROOT)
             for number in (1, 2, 3)]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0]
    writers = {path.name.rsplit("-", 1)[0] for path in segment_files(tmp_path)}
    assert len(writers) == 3  # one identity per process: nobody wrote another's file
    scan = SegmentScan()
    latest = latest_records(tmp_path, scan)
    assert scan.records == 3 * 51 and scan.torn_files == 0
    assert len(latest) == 3 * 50 + 1
    assert latest[0].targets.tolist() == [3] and latest[0].url == "http://shared.test/"  # recorded last
    assert latest[2007].targets.tolist() == [2, 7] and latest[2007].url == "http://p2.test/7"
    table = SegmentLinkTable(tmp_path)
    assert table.sources() == 151 and table.targets_of(0) == [3] and table.targets_of(4) is None
    assert sorted(s for batch in table.scan(batch=40) for s, _ in batch) == sorted(latest)


def test_a_torn_or_corrupt_tail_is_skipped_and_counted(tmp_path: Path) -> None:
    writer = SegmentWriter(tmp_path, identity="p1")
    for source in range(3):
        writer.append(source, float(source), "", [source])
        writer.flush()
    writer.close()
    [path] = segment_files(tmp_path)
    whole = path.read_bytes()
    last = whole.rfind(FRAME_MAGIC)
    path.write_bytes(whole[:last + FRAME.size + 2])  # the last frame cut inside its payload
    scan = SegmentScan()
    assert [record.source for record in read_segments(tmp_path, scan)] == [0, 1]
    assert (scan.frames, scan.torn_files, scan.torn_bytes) == (2, 1, FRAME.size + 2)
    corrupt = bytearray(whole)
    corrupt[-1] ^= 0xFF  # the last frame's payload fails its CRC
    path.write_bytes(bytes(corrupt))
    scan = SegmentScan()
    assert [record.source for record in read_segments(tmp_path, scan)] == [0, 1]
    assert scan.torn_files == 1 and scan.torn_bytes == len(whole) - last
    (tmp_path / "other.seg").write_bytes(b"not a segment")
    scan = SegmentScan()
    assert len(list(read_segments(tmp_path, scan))) == 2 and scan.foreign_files == ["other.seg"]


def test_the_table_reads_its_own_pending_records_and_a_refetch_replaces_a_list(tmp_path: Path) -> None:
    times = iter([1.0, 2.0, 3.0])
    table = SegmentLinkTable(tmp_path, clock=lambda: next(times))
    table.record(1, [5, 6, 5], "http://a.test/")
    table.record(2, [], "http://b.test/")
    assert table.targets_of(1) == [5, 6] and table.targets_of(2) == []  # flushed by the read
    table.record(1, [7], "http://a.test/")
    table.close()
    reopened = SegmentLinkTable(tmp_path)
    assert reopened.targets_of(1) == [7] and reopened.sources() == 2
    assert reopened.node_urls() == {1: "http://a.test/", 2: "http://b.test/"}  # recorded without target URLs
    assert reopened.delete() == 1 and reopened.sources() == 0


def test_a_redis_crawl_killed_with_sigkill_leaves_segments_the_graph_is_built_from(
        tmp_path: Path, start_web: Any, redis_server: Any) -> None:
    from testweb.redisserver import unique_prefix  # noqa: PLC0415

    web = start_web(**WEB)
    prefix, segments = unique_prefix(), tmp_path / "segments"
    redis = {"FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url, "FRONTIER_REDIS_PREFIX": prefix,
             "LINKGRAPH_SEGMENTS_DIR": segments}
    settings = crawl_settings(web, SCHEDULER_PERSIST=True, DOWNLOAD_DELAY=0.02, DEPTH_LIMIT=0,
                              LINKGRAPH_SEGMENT_BLOCK_BYTES=600, **redis)  # a frame every few pages
    # no depth limit (the crawl is killed anyway): a page's truth does not hang on the depth it was
    # found at, which a finished URL's row (deleted on Redis) no longer tells
    proc = start_web_crawl(tmp_path / "run", str(web.seeds_file), settings)
    wait_until(lambda: len(latest_records(segments)) >= 20 or ended([proc]), "link records before the kill",
               CrawlActivity([tmp_path / "run"], also=lambda: len(web.entries())))
    assert proc.poll() is None, "the crawl ended before it could be killed"
    kill_crawl(proc, signal.SIGKILL)
    scan = SegmentScan()
    latest = latest_records(segments, scan)
    assert len(latest) >= 20 and scan.records >= len(latest)
    assert not redis_keys(redis_server.url, f"{prefix}:*links*")  # the lists never went to Redis
    truth = TruthLinks(web, settings)
    for source, record in latest.items():  # every record written is its page's links, named
        assert fp_of(record.url) == source
        assert sorted(record.targets.tolist()) == sorted(truth.of(record.url, 0)), record.url
        assert [fp_of(url) for url in record.target_urls] == record.targets.tolist(), record.url
    edges = {(source, int(target)) for source, record in latest.items() for target in record.targets}
    # a frame torn as a power loss would tear it (a SIGKILL does not): cut short after the last whole one
    path = max(segment_files(segments), key=lambda path: path.stat().st_size)
    with open(path, "ab") as file:
        file.write(FRAME.pack(FRAME_MAGIC, 4096, 0, 9) + b"\x78" * 100)
    run = linkgraph("stats", LINKGRAPH_DIR=tmp_path / "graph", **redis)
    assert run.returncode == 0, run.stderr
    assert "torn or corrupt, skipped" in run.stderr
    stats = json.loads(run.stdout)
    assert (stats["pages"], stats["arcs"], stats["unresolved_targets"]) == (len(latest), len(edges), 0), stats
    assert MAGIC == path.read_bytes()[:len(MAGIC)]
