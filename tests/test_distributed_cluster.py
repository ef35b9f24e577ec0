"""The shared frontier on a local 3-master Redis Cluster (three real
``redis-server`` processes), end to end: three ``scrapy crawl web``
processes, the same checks as on one Redis (tests/test_distributed.py),
and the data partitioned by host over the masters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot

from extensions.backends.redis.keys import Keys, host_tag
from testweb.redisserver import RedisClusterServers, unique_prefix
from tests.redis_helpers import back_list
from tests.test_distributed import (
    BLOOM,
    BLOOM_SETTINGS,
    WEB,
    assert_cash_conserved,
    assert_finished_with_the_truth,
    assert_polite,
    run_together,
    sigkill_one_of_three,
)


@pytest.fixture(scope="module")
def three_on_a_cluster(tmp_path_factory: pytest.TempPathFactory, redis_cluster: RedisClusterServers) -> Any:
    from testweb import WebConfig, start_testweb

    tmp = tmp_path_factory.mktemp("cluster")
    prefix = unique_prefix()
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        results = run_together(web, tmp, redis_cluster.url, prefix)
        yield web, results, redis_cluster.url, prefix


def test_three_processes_on_a_cluster_fetch_exactly_the_ground_truth(three_on_a_cluster: Any) -> None:
    web, results, url, prefix = three_on_a_cluster
    assert_finished_with_the_truth(web, results, url, prefix)


def test_aopic_cash_is_conserved_across_processes_on_a_cluster(three_on_a_cluster: Any) -> None:
    """Per-tag scripts and the ledger's JOIN in its own slot: exact too."""
    _, _, url, prefix = three_on_a_cluster
    assert_cash_conserved(url, prefix)


def test_on_a_cluster_no_host_has_two_requests_in_flight_nor_a_gap_below_its_delay(three_on_a_cluster: Any) -> None:
    web, _, _, _ = three_on_a_cluster
    assert assert_polite(web.entries(), web.crawl_delays()) > 300


def test_a_hosts_frontier_keys_share_its_slot_and_hosts_spread_over_the_masters(three_on_a_cluster: Any) -> None:
    web, _, url, prefix = three_on_a_cluster
    keys = Keys(prefix)
    client = RedisCluster.from_url(url)
    masters_of_leases = set()
    for host in web.model.hosts:
        host_keys = (keys.urls(host_tag(host)), keys.lease(host), back_list(keys, host, "0"),
                     back_list(keys, host, "p"), keys.inflight(host))
        assert len({key_slot(key.encode()) for key in host_keys}) == 1, host
        if client.exists(keys.lease(host)):
            masters_of_leases.add(client.get_node_from_key(keys.lease(host)).name)
    heap_masters = {client.get_node_from_key(keys.host_heap(shard)).name for shard in range(16)}
    client.close()
    assert len(masters_of_leases) == 3
    assert len(heap_masters) == 3


def test_sigkill_of_one_of_three_on_a_cluster_loses_nothing(
    tmp_path: Path, start_web: Any, redis_cluster: RedisClusterServers,
) -> None:
    sigkill_one_of_three(tmp_path, start_web, redis_cluster.url, conserved=False)


def test_three_processes_sharing_the_bloom_filter_on_a_cluster_fetch_exactly_the_ground_truth(
    tmp_path: Path, start_web: Any, redis_cluster: RedisClusterServers,
) -> None:
    """The shared URL-seen Bloom filter on a cluster: the truth, every
    finished row trimmed, and each host's filter shard in its slot, the
    shards spread over the three masters."""
    web = start_web(**WEB)
    prefix = unique_prefix()
    results = run_together(web, tmp_path, redis_cluster.url, prefix, **BLOOM_SETTINGS)
    assert_finished_with_the_truth(web, results, redis_cluster.url, prefix, BLOOM)
    keys = Keys(prefix)
    client = RedisCluster.from_url(redis_cluster.url)
    masters = set()
    for host in {entry.host for entry in web.entries() if entry.path != "/robots.txt"}:
        tag = host_tag(host)
        assert key_slot(keys.bloom(tag).encode()) == key_slot(keys.urls(tag).encode()), host
        assert client.exists(keys.bloom(tag)), host
        masters.add(client.get_node_from_key(keys.bloom(tag)).name)
    client.close()
    assert len(masters) == 3
