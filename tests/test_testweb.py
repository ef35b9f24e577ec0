"""The synthetic web (bench.testweb): a real server subprocess and its truth."""

from __future__ import annotations

import http.client
import socket
import struct
from dataclasses import replace
from urllib.parse import urljoin, urlsplit

import pytest
from protego import Protego
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url

from bench.testweb import SiteModel, WebConfig, compute_truth, start_testweb
from bench.testweb.media import DIMENSIONS
from bench.testweb.model import USER_AGENT, host_name, robots_variant
from bench.testweb.truth import page_links

CONFIG = WebConfig(hosts=12, pages=10, links=6, seed=1, slow_delay=0.3)


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with start_testweb(CONFIG, tmp_path_factory.mktemp("testweb")) as running:
        yield running


def get(web, host: str, path: str, method: str = "GET", headers: dict | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
    try:
        connection.request(method, path, headers={"Host": host, **(headers or {})})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def target_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# --- determinism and routing ---------------------------------------------------

def test_same_seed_serves_same_bytes_as_the_model(web):
    model = SiteModel(CONFIG, web.port)
    for host, path in (("h0000.test", "/"), ("h0003.test", "/p/7.html"), ("special.test", "/")):
        status, _, body = get(web, host, path)
        assert status == 200
        assert body == get(web, host, path)[2] == model.page(host, path).body


def test_different_seed_gives_different_pages(web):
    other = SiteModel(replace(CONFIG, seed=2), web.port)
    assert other.page("h0000.test", "/").body != get(web, "h0000.test", "/")[2]


def test_host_header_selects_the_virtual_host(web):
    assert b"<title>h0000.test home" in get(web, "h0000.test", "/")[2]
    assert b"<title>h0002.test home" in get(web, f"H0002.TEST:{web.port}", "/")[2]
    assert get(web, "unknown.test", "/")[0] == 404
    assert get(web, "h0000.test", "/p/999.html")[0] == 404


def test_query_argument_order_does_not_change_the_page(web):
    first = get(web, "special.test", "/q.html?b=2&a=1")
    assert first[0] == 200
    assert first[2] == get(web, "special.test", "/q.html?a=1&b=2")[2]
    assert get(web, "h0001.test", "/s/search.html?b=1&a=2&a=2")[2] == \
        get(web, "h0001.test", "/s/search.html?a=2&a=2&b=1")[2]


def test_percent_encoding_is_normalised(web):
    assert get(web, "special.test", "/enc/caf%c3%a9.html")[2] == get(web, "special.test", "/enc/caf%C3%A9.html")[2]
    assert get(web, "special.test", "/enc/%7Euser.html")[0] == 200


# --- robots.txt ---------------------------------------------------------------

def test_robots_variants_are_all_present(web):
    statuses, bodies = set(), []
    for index in range(CONFIG.hosts):
        status, _, body = get(web, host_name(index), "/robots.txt")
        statuses.add(status)
        bodies.append(body.decode())
    assert statuses == {200, 404, 503}
    assert any("Crawl-delay: 0.2" in body for body in bodies)
    assert any("Allow: /private/ok.html" in body for body in bodies)


def test_wrong_robots_group_gives_a_different_answer(web):
    index = next(i for i in range(CONFIG.hosts) if robots_variant(i, CONFIG.hosts) == "groups")
    rules = Protego.parse(get(web, host_name(index), "/robots.txt")[2].decode())
    url = web.url(host_name(index), "/p/0.html")
    assert rules.can_fetch(url, USER_AGENT)
    assert not rules.can_fetch(url, "otherbot/1.0")


# --- redirects, errors, slowness ----------------------------------------------------

def test_redirect_chain_ends_on_a_page(web):
    path, statuses = "/r/301-1", []
    while True:
        status, headers, _ = get(web, "special.test", path)
        statuses.append(status)
        if status not in (301, 302, 307, 308):
            break
        path = headers["Location"]
    assert statuses == [301, 301, 302, 200]


def test_redirect_loop_returns_to_its_start(web):
    assert get(web, "special.test", "/r/loop-a")[1]["Location"] == "/r/loop-b"
    assert get(web, "special.test", "/r/loop-b")[1]["Location"] == "/r/loop-a"


def test_error_pages_answer_their_status(web):
    assert [get(web, "special.test", p)[0] for p in ("/missing.html", "/error/500.html", "/error/503.html")] \
        == [404, 500, 503]


def test_slow_host_delays_without_blocking_other_connections(web):
    slow = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
    slow.request("GET", "/2.html", headers={"Host": "slow.test"})
    assert get(web, "h0000.test", "/p/1.html?fast=1")[0] == 404
    assert slow.getresponse().read()
    slow.close()
    entries = {e.path: e for e in web.entries() if e.host in ("slow.test", "h0000.test")}
    slow_entry, fast_entry = entries["/2.html"], entries["/p/1.html?fast=1"]
    assert slow_entry.end - slow_entry.start >= CONFIG.slow_delay * 0.95
    assert fast_entry.end < slow_entry.end


# --- content -------------------------------------------------------------------

def image_size(kind: str, body: bytes) -> tuple[int, int]:
    if kind == "gif":
        assert body[:6] == b"GIF89a" and body.endswith(b";")
        return struct.unpack("<HH", body[6:10])
    if kind == "png":
        assert body[:8] == b"\x89PNG\r\n\x1a\n" and body[12:16] == b"IHDR"
        return struct.unpack(">II", body[16:24])
    assert body[:2] == b"\xff\xd8" and body.endswith(b"\xff\xd9")
    offset = 2
    while body[offset + 1] != 0xC0:
        offset += 2 + struct.unpack(">H", body[offset + 2:offset + 4])[0]
    height, width = struct.unpack(">HH", body[offset + 5:offset + 9])
    return width, height


@pytest.mark.parametrize("kind,path", [("gif", "/img/pic.gif"), ("png", "/img/pic.png"), ("jpeg", "/img/pic.jpg")])
def test_images_have_their_declared_dimensions(web, kind, path):
    status, headers, body = get(web, "special.test", path)
    assert status == 200 and headers["Content-Type"] == f"image/{kind}"
    assert image_size(kind, body) == DIMENSIONS[kind]


def test_pdf_is_a_pdf(web):
    status, headers, body = get(web, "special.test", "/doc/paper.pdf")
    assert headers["Content-Type"] == "application/pdf"
    assert body.startswith(b"%PDF-1.4") and body.rstrip().endswith(b"%%EOF")


def test_big_page_is_over_five_megabytes(web):
    expected = int(CONFIG.big_page_mb * 1024 * 1024)
    status, headers, body = get(web, "special.test", "/big.html")
    assert status == 200 and len(body) == expected > 5 * 1024 * 1024
    status, headers, body = get(web, "special.test", "/big.html", method="HEAD")
    assert int(headers["Content-Length"]) == expected and body == b""


def test_charset_pages_carry_non_ascii_text(web):
    _, headers, body = get(web, "special.test", "/charset/latin1.html")
    assert "iso-8859-1" in headers["Content-Type"] and "Café".encode("latin-1") in body
    assert "日本語".encode("shift_jis") in get(web, "special.test", "/charset/sjis.html")[2]
    assert "Привет".encode("cp1251") in get(web, "special.test", "/charset/cp1251.html")[2]


def lxml_links(page, url: str) -> set[str]:
    """Links as the crawler extracts them: Scrapy's decoding, lxml's parse."""
    response = HtmlResponse(url, body=page.body, headers={"Content-Type": page.content_type})
    base = get_base_url(response)
    hrefs = response.xpath("//a/@href | //area/@href | //frame/@src | //iframe/@src"
                           " | //link[@rel='next' or @rel='prev' or @rel='alternate']/@href").getall()
    return {urljoin(base, href.strip()) for href in hrefs}


def test_model_links_are_what_lxml_finds_in_the_html(web):
    model, truth = SiteModel(CONFIG, web.port), web.truth()
    for url in sorted(truth.fetched):
        page = model.page(urlsplit(url).hostname, target_of(url))
        if page.status == 200 and page.is_html and not page.stream:
            followed, skipped = page_links(page, url, follow_nofollow=False)
            assert lxml_links(page, url) == set(followed) | set(skipped), url


def test_connection_close_is_honoured(web):
    with socket.create_connection(("127.0.0.1", web.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: h0000.test\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and b"Connection: close" in data


def test_pipelined_requests_are_answered_in_order(web):
    with socket.create_connection(("127.0.0.1", web.port), timeout=5) as sock:
        sock.sendall(b"GET /p/1.html HTTP/1.1\r\nHost: h0001.test\r\n\r\n"
                     b"HEAD /p/2.html HTTP/1.1\r\nHost: h0001.test\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 2 and b"h0001.test page 1" in data


def test_access_log_holds_every_response_after_flush(web):
    paths = [f"/p/{n}.html?log={n}" for n in range(20)]
    for path in paths:
        get(web, "h0002.test", path)
    logged = [e for e in web.entries() if e.host == "h0002.test" and "log=" in e.path]
    assert [e.path for e in logged] == paths
    assert all(e.status == 404 and e.start <= e.end for e in logged)
    assert not any(e.path.startswith("/__testweb/") for e in web.entries())


def test_seeds_and_hosts_files(web):
    seeds = web.seeds_file.read_text().split()
    assert web.url("h0000.test", "/") in seeds
    hosts = web.hosts_file.read_text()
    assert "127.0.0.1\th0000.test" in hosts and "mirror0.test" in hosts


# --- ground truth ----------------------------------------------------------------

@pytest.fixture(scope="module")
def truth(web):
    return web.truth(depth_limit=10)


def test_truth_regular_pages_are_shallow(truth):
    assert truth.regular_max_depth < 10
    assert all(truth.depth[url] <= truth.regular_max_depth for url in truth.regular)


def test_every_allowed_regular_page_is_reached(web, truth):
    for index in range(CONFIG.hosts):
        for number in range(CONFIG.pages):
            url = web.url(host_name(index), f"/p/{number}.html")
            assert url in truth.fetched or url in truth.disallowed


def test_traps_are_bounded_by_the_depth_limit(web, truth):
    assert truth.traps and all(truth.depth[url] <= 10 for url in truth.traps)
    shallow = web.truth(depth_limit=4)
    assert shallow.traps < truth.traps and len(truth.traps) < 60


def test_disallowed_nofollow_and_fetched_are_disjoint(truth):
    assert truth.disallowed and truth.nofollow
    assert not truth.disallowed & truth.fetched
    assert not truth.nofollow & truth.fetched


def test_duplicates_point_to_fetched_pages(truth):
    assert truth.duplicates and truth.near_duplicates
    assert set(truth.duplicates.values()) <= truth.fetched
    assert set(truth.near_duplicates.values()) <= truth.fetched


def test_mirror_pages_are_byte_identical(web, truth):
    for copy, original in list(truth.duplicates.items())[:5]:
        assert get(web, "mirror0.test", target_of(copy))[2] == get(web, "h0001.test", target_of(original))[2]


def test_truth_follows_redirects_and_not_embedded_resources(web, truth):
    special = web.url("special.test", "")
    assert {special + p for p in ("/r/loop-a", "/r/loop-b", "/r/301-2", "/r/done.html")} <= truth.fetched
    assert not {special + p for p in ("/img/unlinked.png", "/style.css", "/app.js")} & truth.fetched
    assert not any(len(url) > 2083 for url in truth.fetched)


def test_robots_5xx_policy_decides_the_last_host(web):
    last = web.url(host_name(CONFIG.hosts - 1), "/")
    assert last in web.truth(robots_5xx="allow").fetched
    assert last in web.truth(robots_5xx="disallow").disallowed


def test_nofollow_links_are_followed_on_request(web):
    assert web.truth(follow_nofollow=True).nofollow == set()


def test_default_config_reaches_every_page_shallowly():
    truth = compute_truth(SiteModel(WebConfig(), 8080))
    assert truth.regular_max_depth <= 7
