"""The one Redis layer: one connection per crawler, scripts by SHA, one
process registry with the last-one-out rule for the frontier and the
content-seen sets alike. Real redis-server (single and cluster)."""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from extensions.backends.redis import scripts
from extensions.backends.redis.contentseen import RedisContentSeen
from extensions.backends.redis.factory import redis_connection, redis_store
from extensions.backends.redis.rows import (
    pack_row,
    row_head,
    unpack_cash,
    unpack_entry,
)
from extensions.backends.redis.scripts import source
from extensions.backends.redis.store import RedisStore
from extensions.contentseen.fingerprint import to_signed64
from extensions.frontier.scheduler import Frontier
from extensions.frontier.store import FLAG_HAS_DEPTH, Entry, Status
from extensions.pipelines.contentseen import ContentSeenPipeline
from tests.redis_helpers import DistributedFrontier, crawler_process
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix


def _entries(count: int, host: str = "a.test") -> list[Entry]:
    from extensions.frontier.fingerprint import url_fingerprint

    return [Entry(url_fingerprint(f"http://{host}/{i}")[0], f"http://{host}/{i}", host) for i in range(count)]


def _commandstats(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("eval", "evalsha")}


def test_scripts_go_by_sha_and_survive_a_script_flush(redis_server: RedisServer) -> None:
    """After open, a script travels as EVALSHA, never as its text; when the
    server loses its script cache (SCRIPT FLUSH, a restart, a fail-over) the
    connection loads the scripts again and the call still works."""
    store = RedisStore(redis_server.url, unique_prefix())
    store.open()
    observer = redis.Redis.from_url(redis_server.url)
    before = _commandstats(observer)
    entries = _entries(20)
    assert store.urls.insert_new(entries, 0.0) == [True] * 20
    store.urls.set_status([entries[0].fingerprint], Status.INFLIGHT)
    assert store.urls.status_of(entries[0].fingerprint) == Status.INFLIGHT
    after = _commandstats(observer)
    assert after["eval"] == before["eval"]
    assert after["evalsha"] > before["evalsha"]

    observer.script_flush()
    assert store.urls.insert_new(_entries(5, "b.test"), 0.0) == [True] * 5  # NOSCRIPT, loaded, sent again
    store.urls.set_status([entries[1].fingerprint], Status.DONE)
    assert store.urls.status_of(entries[1].fingerprint) == Status.DONE
    assert store.connection.script_reloads == 1
    assert store.urls.insert_new(_entries(5, "b.test"), 0.0) == [False] * 5
    assert store.connection.script_reloads == 1  # loaded once: no second reload
    store.close()
    observer.close()


def test_scripts_survive_a_script_flush_on_a_cluster(redis_cluster: RedisClusterServers) -> None:
    store = RedisStore(redis_cluster.url, unique_prefix())
    store.open()
    hosts = [f"h{i}.test" for i in range(12)]  # tags spread over the masters
    for host in hosts:
        assert store.urls.insert_new(_entries(2, host), 0.0) == [True, True]
    observer = RedisCluster.from_url(redis_cluster.url)
    observer.script_flush()  # on every master
    for host in hosts:
        assert store.urls.insert_new(_entries(3, host), 0.0) == [False, False, True]
    assert store.connection.script_reloads >= 1
    store.close()
    observer.close()


def test_a_script_is_its_file_with_each_include_once_and_every_parameter_filled() -> None:
    acquire = source("lease_acquire", LEVEL_SPAN=1 << 40, PARKED=1 << 52)  # now, requeue_inflight (rows, backq)
    assert acquire.count("local function now_ms(") == acquire.count("local function row_status(") == 1
    assert "--- @include" not in acquire and re.search(r"\$[A-Z]", acquire) is None
    with pytest.raises(KeyError, match=r"lua/lease_take.lua: no value for \$(LEVEL_SPAN|PARKED)"):
        source("lease_take")
    assert "fmt(4503599627370496)" in source("lease_take", LEVEL_SPAN=1 << 40, PARKED=1 << 52)


def test_a_script_keeps_every_definition_it_reaches_and_leaves_out_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A script's text keeps, of its includes' top-level definitions, those its
    code names (directly or through another kept one), so none is missing when
    it runs, and no others (they would be re-created on every call)."""
    package = Path(scripts.__file__).parent
    declared = re.compile(r"^local (?:function )?([\w, ]+?)\s*(?:[=(\n]|$)", re.MULTILINE)

    def names(text: str) -> set[str]:
        return {name.strip() for found in declared.findall(text) for name in found.split(",")}

    parameters = {"LEVEL_SPAN": 1 << 40, "PARKED": 1 << 52, "GET": "row_get", "SET": "row_set"}
    for path in (package / "lua").glob("*.lua"):
        text = source(path.stem, **parameters)
        with monkeypatch.context() as patched:
            patched.setattr(scripts, "reached", lambda definitions, body: definitions)
            defined = names(source(path.stem, **parameters))  # every definition of its includes
        code = re.sub(r"--[^\n]*", "", re.sub(r"^local (?:function )?[\w, ]+", "", text, flags=re.M))
        assert set(re.findall(r"[A-Za-z_]\w*", code)) & defined <= names(text), path.stem
    take = source("lease_take", **parameters)
    assert "local function bq_pop(" in take and "local function bq_push(" not in take
    assert "local function bloom_add(" not in take and "local function fpset_add(" not in take
    assert "local function fpmap_record(" in take  # reached only through other kept definitions
    read = source("near_read")
    assert "local function fpset_add_width(" in read and "local function fpset_delete(" not in read
    assert "local function fpset_has(" not in read and "local function fpset_add(" not in read


def test_every_lua_file_is_a_script_the_redis_backend_loads() -> None:
    package = Path(scripts.__file__).parent
    python = "".join(path.read_text() for path in package.glob("*.py"))
    unused = [path.name for path in (package / "lua").glob("*.lua") if f'lua("{path.stem}"' not in python]
    included = "".join(path.read_text() for path in (package / "lua").rglob("*.lua"))
    unused += [path.name for path in (package / "lua" / "include").glob("*.lua")
               if f'--- @include "{path.stem}"' not in included]
    assert not unused, unused


@pytest.mark.parametrize("entry", [
    Entry(7, "http://ü.test/path?q=1", "ü.test", level=3, referer="http://r.test/"),
    Entry(-8, "https://a.test:8443/x?y", "a.test", priority=-5, depth=300, referer="https://a.test/", flags=3,
          extra='{"k": 1}', blob=b"\x00\xff"),
    Entry(9, "http://b.test", "other.test", referer="http://b.test/z"),
    Entry(12, "https://c.test/a", "c.test", referer="http://d.test/b"),
    Entry(13, "https://c.test/a", "c.test", referer="https://"),
    Entry(14, "ftp://c.test/a", "c.test", referer="ftp://d.test/b"),
], ids=["other-referer", "https-port-same-host-referer", "url-not-of-its-host", "referer-of-another-scheme",
        "referer-the-scheme-alone", "not-http"])
@pytest.mark.parametrize("fetched", [1234.5, None], ids=["fetched", "never-fetched"])
def test_the_lua_row_accessors_read_what_pack_row_wrote(redis_server: RedisServer, entry: Entry,
                                                        fetched: float | None) -> None:
    """The Lua side of the URL-row format (lua/include/rows.lua) takes its
    offsets from the same constants as pack_row: a script reading the status,
    the host, the URL (kept without its scheme and host where they are the
    row's) and the fetch time of a packed row gets what Python put there; a
    row never fetched is 8 bytes shorter (no fetch time) and stays so."""
    client = redis.Redis.from_url(redis_server.url)
    row = pack_row(entry, Status.DEFERRED, 42, fetched=fetched)
    assert len(row) == len(pack_row(entry, Status.DEFERRED, 42, fetched=1.0)) - (8 if fetched is None else 0)
    status, host, url, changed = client.eval(source("include/rows") + """
      local row = ARGV[1]
      return {row_status(row), row_host(row), row_url(row), row_with(S_QUEUED, row_fetched(row), row)}
    """, 0, row)
    assert status == b"5" and host.decode() == entry.host and url.decode() == entry.url
    assert changed == pack_row(entry, Status.QUEUED, 42, fetched=fetched)
    assert unpack_entry(entry.fingerprint, changed) == entry
    assert row_head(changed) == (Status.QUEUED, fetched, 42, entry.level)
    client.close()


def test_a_row_leaves_out_the_fields_that_are_zero_or_none_and_reads_back_whole(redis_server: RedisServer) -> None:
    """Each of seq, level, priority, depth, flags, referer, extra and blob
    (bit 0 .. 7 of ``present``) set or left at 0 / None (flags: at a link's
    usual FLAG_HAS_DEPTH): the row holds one byte for the eight and only the
    fields set; Python and the scripts read every combination back."""
    values = {"level": 3, "priority": -2, "depth": 300, "flags": 5 | FLAG_HAS_DEPTH, "referer": "http://q.test/r",
              "extra": '{"k": 1}', "blob": b"\x01"}
    bare = pack_row(Entry(11, "http://q.test/path", "q.test", flags=FLAG_HAS_DEPTH), Status.QUEUED, 0)
    assert len(bare) == 1 + 1 + len("q.test") + 1 + 1 + len("/path")  # status, host, present, url
    client = redis.Redis.from_url(redis_server.url)
    rows, entries = [], []
    for present in range(256):
        chosen = {name: value for bit, (name, value) in enumerate(values.items(), 1) if present >> bit & 1}
        entry = Entry(11, "http://q.test/path", "q.test", **{"flags": FLAG_HAS_DEPTH, **chosen})
        seq = 99 if present & 1 else 0
        row = pack_row(entry, Status.QUEUED, seq)
        assert (len(row) > len(bare)) == bool(present), present
        assert unpack_entry(11, row) == entry and row_head(row)[2] == seq, present
        rows.append(row)
        entries.append(entry)
    urls = client.eval(source("include/rows") + """
      local out = {}
      for i = 1, #ARGV do out[i] = row_url(ARGV[i]) end
      return out""", 0, *rows)
    assert [url.decode() for url in urls] == [entry.url for entry in entries]
    client.close()


@pytest.mark.parametrize(("url", "referer", "kept"), [
    ("https://a.test/x", "https://b.test/page", b"b.test/page"),
    ("http://a.test/docs/3.11/library/os.html", "http://a.test/docs/3.11/library/index.html", b"index.html"),
    ("http://a.test/docs/a", "http://a.test/docs/a", b""),
    ("http://a.test/docs/a", "http://a.test/docs/a?b", b"?b"),
    ("http://a.test/x", "ftp://a.test/x", b"ftp://a.test/x"),
    ("http://a.test/é/1", "http://a.test/é/2", b"2"),
], ids=["other-host", "same-directory", "the-url-itself", "the-url-and-more", "nothing-shared", "utf-8"])
def test_a_referer_is_kept_without_the_first_bytes_it_shares_with_the_url(url: str, referer: str,
                                                                          kept: bytes) -> None:
    """A Referer is stored as how many first bytes it shares with its URL and
    the rest: only the rest's bytes are in the row, and it reads back whole."""
    entry = Entry(15, url, "a.test", referer=referer)
    row = pack_row(entry, Status.QUEUED, 0)
    assert row.endswith(kept) and len(row) == len(pack_row(Entry(15, url, "a.test"), Status.QUEUED, 0)) + 2 + len(kept)
    assert unpack_entry(15, row) == entry


@pytest.mark.parametrize("fetched", [1234.5, None], ids=["fetched", "never-fetched"])
def test_a_port_after_the_host_is_kept_once_with_the_host(redis_server: RedisServer, fetched: float | None) -> None:
    """A URL naming a port keeps it in the row's host field, once for the URL
    and a Referer of the same host and port; Python and the scripts read the
    host without it and the URLs whole."""
    entry = Entry(10, "http://p.test:8080/a/b?c", "p.test", referer="http://p.test:8080/d", depth=2)
    row = pack_row(entry, Status.QUEUED, 7, fetched=fetched)
    assert row.count(b"8080") == 1 and row.count(b"p.test") == 1
    assert unpack_entry(entry.fingerprint, row) == entry
    client = redis.Redis.from_url(redis_server.url)
    host, url = client.eval(source("include/rows") + """
      local row = ARGV[1]
      return {row_host(row), row_url(row)}
    """, 0, row)
    assert (host.decode(), url.decode()) == ("p.test", entry.url)
    client.close()


def test_a_back_queue_list_keeps_a_fingerprint_as_its_member_and_gives_it_back_in_decimal(
        redis_server: RedisServer) -> None:
    """A level's list holds the 5-byte member (lua/include/backq.lua); the
    list's tag gives back the top 24 bits: every fingerprint comes back as
    the signed decimal it went in as, at the edges of both halves and the sign too."""
    rng = random.Random(3)
    tags = [0, 1, 0x7FFFFF, 0x800000, 0x800001, 0xFFFFFF, *(rng.getrandbits(24) for _ in range(40))]
    lows = [0, 1, (1 << 40) - 1, 1 << 39, *(rng.getrandbits(40) for _ in range(10))]
    values = [to_signed64(tag << 40 | low) for tag in tags for low in lows]
    client = redis.Redis.from_url(redis_server.url)
    script = source("include/backq", LEVEL_SPAN=1 << 40, PARKED=1 << 52) + """
      local out = {}
      for i = 2, #ARGV do out[#out + 1] = bq_fp(ARGV[1], fp_member(ARGV[i])) end
      return out
    """
    for tag in tags:
        chosen = [value for value in values if (value >> 40) & 0xFFFFFF == tag]
        back = f"web:{{{tag:06x}}}:lease:h.test"
        assert client.eval(script, 0, back, *map(str, chosen)) == [str(value).encode() for value in chosen]
    client.close()


@pytest.mark.parametrize("row", [(0.25, 0.0, 0), (-3.25, 1.5, 2)], ids=["never-fetched", "fetched"])
def test_the_lua_cash_accessors_write_settled_rows_python_reads(
        redis_server: RedisServer, row: tuple[float, float, int]) -> None:
    """Lua (lua/include/cash.lua) writes a row settled at dividend 0: u
    alone in single precision (4 bytes) until fetched, then u, history,
    visits (24), read back as Python reads them."""
    client = redis.Redis.from_url(redis_server.url)
    fp = -(1 << 62) - 12345
    read, written = client.eval(source("include/cash") + """
      cash_put(KEYS[1], fp_member(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
      local row = cash_get(KEYS[1], fp_member(ARGV[1]))
      return {{tostring(row[1]), tostring(row[2]), tostring(row[3])}, hashmap_get(KEYS[1], ARGV[1])}
    """, 1, "cash-test", fp, *row)
    u, history, visits = row
    assert [float(value) for value in read] == [u, history, visits]
    assert written == (struct.pack(">f", u) if visits == 0 else struct.pack(">ddq", u, history, visits))
    assert unpack_cash(written) == (u, history, 0.0, visits)
    client.delete("cash-test", *client.keys("cash-test:*"))
    client.close()


def test_a_cash_row_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError, match="cash row of 12 bytes"):
        unpack_cash(bytes(12))


def _crawler(url: str, prefix: str, **extra: Any) -> Any:
    return get_crawler(Spider, {"FRONTIER_BACKEND": "redis", "REDIS_URL": url, "FRONTIER_REDIS_PREFIX": prefix,
                                "CONTENTSEEN_FLUSH_INTERVAL": 0, **extra})


def _frontier(crawler: Any) -> DistributedFrontier:
    """The shared frontier on the crawler's store, without Scrapy's timers
    (this test runs no reactor)."""
    return DistributedFrontier(redis_store(crawler), ledger=None)


def test_one_crawler_opens_one_connection_for_the_frontier_and_the_content_seen_sets(
        redis_server: RedisServer) -> None:
    """The frontier's store (with its host leases) and the content-seen sets
    of one crawler share one connection: the server sees one client for the
    crawler, and its pool made one connection (there were one per component)."""
    prefix = unique_prefix()
    crawler = _crawler(redis_server.url, prefix, FRONTIER_AOPIC=True)
    pipeline = ContentSeenPipeline.from_crawler(crawler)
    connection = redis_connection(crawler)
    assert Frontier.from_crawler(crawler).store.connection is connection
    assert pipeline.sets.store.connection is connection
    frontier = _frontier(crawler)
    frontier.open(None)
    pipeline.open_spider()
    connection.client.client_setname(prefix)  # names the pool's one connection
    assert frontier.enqueue_request(Request("http://a.test/"))
    assert frontier.next_request() is not None
    pipeline.exact.add_or_get(1, "http://a.test/")
    observer = redis.Redis.from_url(redis_server.url)
    names = [entry.get("name") for entry in observer.client_list()]
    ours = [entry for entry in observer.client_list() if entry.get("name") == prefix]
    assert len(ours) == 1, names
    assert connection.client.connection_pool._created_connections == 1
    pipeline.close()
    frontier.close("finished")
    assert connection.client is None  # the last user closed it
    observer.close()


def test_one_process_is_one_member_of_the_registry(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    crawler = _crawler(redis_server.url, prefix, SCHEDULER_PERSIST=True)
    frontier = _frontier(crawler)
    pipeline = ContentSeenPipeline.from_crawler(crawler)
    frontier.open(None)
    pipeline.open_spider()
    pipeline.exact.add_or_get(1, "http://a.test/")  # rides a heartbeat
    observer = redis.Redis.from_url(redis_server.url)
    members = observer.zrange(f"{prefix}:processes", 0, -1)
    assert members == [frontier.store.registry.owner.encode()]
    pipeline.close()
    assert observer.zrange(f"{prefix}:processes", 0, -1) == members  # the frontier still runs
    frontier.close("finished")
    assert observer.zcard(f"{prefix}:processes") == 0
    observer.close()


def _keys(client: Any, prefix: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{prefix}:*"))


@pytest.mark.parametrize("content_first", [True, False])
def test_the_last_process_out_deletes_the_keys_of_both_stores(redis_server: RedisServer,
                                                                content_first: bool) -> None:
    """SCHEDULER_PERSIST off: the frontier's and the content-seen keys stay
    while another process is alive, and go with the last one, whichever of
    a process's components closes first."""
    prefix = unique_prefix()
    observer = redis.Redis.from_url(redis_server.url)
    first, second = crawler_process(redis_server.url, prefix), crawler_process(redis_server.url, prefix)
    for number, (frontier, seen) in enumerate((first, second)):
        assert frontier.enqueue_request(Request(f"http://h{number}.test/"))
        seen.add_or_get(number + 1, f"http://h{number}.test/")
    assert observer.zcard(f"{prefix}:processes") == 2

    def close(process: tuple[DistributedFrontier, RedisContentSeen]) -> None:
        frontier, seen = process
        if content_first:
            seen.close()
            frontier.close("finished")
        else:
            frontier.close("finished")
            seen.close()

    close(first)
    left = _keys(observer, prefix)
    assert any(b":contentseen:" in key for key in left) and any(b":urls" in key for key in left)
    assert observer.zcard(f"{prefix}:processes") == 1
    close(second)
    assert _keys(observer, prefix) == []
    observer.close()
