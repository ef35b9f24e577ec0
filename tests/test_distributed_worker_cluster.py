"""The shared frontier's worker thread (FRONTIER_REDIS_IO_THREAD, on by
default) on a local 3-master Redis Cluster, end to end: three ``scrapy crawl
web`` processes fetch exactly the ground truth and each sends its per-page
lease commands through its worker (it used to be kept off on a Cluster).

The worker's pipelines carry commands of many slots; each command's keys
share one slot (a host's keys its ``{T}`` tag, each heap shard its
``{heap-N}``), which is all a Redis Cluster pipeline needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testweb.redisserver import RedisClusterServers, unique_prefix
from tests.test_distributed import WEB, assert_finished_with_the_truth, run_together


def test_three_processes_with_the_worker_on_a_cluster_each_acquire_hosts_and_fetch_the_truth(
    tmp_path: Path, start_web: Any, redis_cluster: RedisClusterServers,
) -> None:
    web = start_web(**WEB)
    prefix = unique_prefix()
    results = run_together(web, tmp_path, redis_cluster.url, prefix, FRONTIER_REDIS_IO_THREAD=True)
    assert_finished_with_the_truth(web, results, redis_cluster.url, prefix)
    for result in results:
        stats = result.stats
        assert stats.get("frontier/leases_acquired", 0) > 0
        # the worker carried at least one job per page (a take; under load it
        # sends several in one pipeline); without the worker it carries none
        assert stats["redis/worker_jobs"] >= stats["frontier/done"], stats
