"""The synthetic web (testweb): a real server subprocess and its truth."""

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

from testweb import SiteModel, WebConfig, compute_truth, start_testweb
from testweb.media import DIMENSIONS
from testweb.model import USER_AGENT, Page, host_name, robots_variant
from testweb.robots_hosts import sitemap_locations
from testweb.truth import fetch_robots, page_links

CONFIG = WebConfig(hosts=12, pages=10, links=6, seed=1, slow_delay=0.3, nav_sections=5)  # not the default: the server gets it


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


# --- site chrome and link locality ----------------------------------------------------

def menu_of(page: Page) -> list[tuple[str, str]]:
    """(href, anchor text) of the links inside the page's ``<nav>``."""
    response = HtmlResponse("http://x/", body=page.body, encoding="utf-8")
    return [(a.attrib["href"], a.xpath("string()").get()) for a in response.css("nav a")]


def test_every_page_of_a_regular_host_carries_the_same_menu(web, truth):
    """Home and the first nav_sections pages, same hrefs, order and anchor
    text on every HTML page of the host (search and private pages too)."""
    model = SiteModel(CONFIG, web.port)
    sections = min(CONFIG.nav_sections, CONFIG.pages)
    for index in (0, 5):
        host = host_name(index)
        urls = [url for url in truth.fetched if urlsplit(url).hostname == host]
        menus = {tuple(menu_of(model.page(host, target_of(url)))) for url in urls}
        assert len(urls) > CONFIG.pages and len(menus) == 1
        (menu,) = menus
        assert [href for href, _ in menu] == ["/"] + [f"/p/{n}.html" for n in range(sections)]
        assert menu[0][1] == "Home" and all(label.isalpha() for _, label in menu)
    other = {tuple(menu_of(model.page(host_name(index), "/"))) for index in range(CONFIG.hosts)}
    assert len(other) > 1  # anchor text drawn per host


def test_menu_is_deterministic_from_the_seed_and_can_be_switched_off(web):
    model = SiteModel(CONFIG, web.port)
    body = get(web, "h0002.test", "/p/3.html")[2]
    assert menu_of(Page(200, body=body)) == menu_of(model.page("h0002.test", "/p/3.html"))
    reseeded = SiteModel(replace(CONFIG, seed=2), web.port).page("h0002.test", "/p/3.html")
    assert [href for href, _ in menu_of(reseeded)] == [href for href, _ in menu_of(Page(200, body=body))]
    assert menu_of(reseeded) != menu_of(Page(200, body=body))
    bare = SiteModel(replace(CONFIG, nav_sections=0), web.port).page("h0002.test", "/p/3.html")
    assert b"<nav" not in bare.body and not menu_of(bare)


def test_special_and_trap_hosts_have_no_menu(web):
    model = SiteModel(CONFIG, web.port)
    assert not menu_of(model.page("special.test", "/")) and not menu_of(model.page("trap.test", "/"))


def graph_bits_per_link(config: WebConfig, tmp_path) -> float:
    """BVGraph bits per link of the ground-truth crawl's link graph (the
    fetched pages' outlinks, canonical, ids in the link graph's order)."""
    import numpy as np  # noqa: PLC0415

    from extensions.linkgraph.bvgraph import Adjacency, write_bvgraph  # noqa: PLC0415
    from extensions.linkgraph.build import node_order  # noqa: PLC0415
    from testweb.truth import safe_canonical  # noqa: PLC0415

    model = SiteModel(config, 8080)
    edges = set()
    for url in compute_truth(model).fetched:
        followed, _ = page_links(model.page(urlsplit(url).hostname, target_of(url)), url, False)
        edges.update((url, target) for target in map(safe_canonical, followed) if target)
    urls = sorted({url for edge in edges for url in edge})
    node = {urls[position]: ident for ident, position in enumerate(node_order(urls))}
    sources, targets = (np.array([node[edge[side]] for edge in edges]) for side in (0, 1))
    size = write_bvgraph(tmp_path / "graph", Adjacency.from_arcs(len(urls), sources, targets))
    return size.graph_bits / len(edges)


def test_regular_hosts_link_graph_has_real_sites_locality(tmp_path):
    """With the menu and local links, BVGraph codes the default web's graph
    in under 4 bits per link, as it does real sites; without the menu, over 5."""
    assert graph_bits_per_link(WebConfig(), tmp_path) < 4
    assert graph_bits_per_link(WebConfig(nav_sections=0), tmp_path) > 5


# --- robots.txt edge-case hosts (RFC 9309) ------------------------------------------

ROBOTS_SITE = ("/", "/allowed.html", "/private/secret.html", "/p/1.html", "/p/2.html", "/p/3.html", "/p/4.html")
PRIVATE_ONLY = {"/private/secret.html"}
EXPECTED_DISALLOWED = {  # variant -> site paths an RFC 9309 crawler with our user agent skips
    "bom": PRIVATE_ONLY, "big": PRIVATE_ONLY, "html": set(), "redirect": PRIVATE_ONLY,
    "redirect5": PRIVATE_ONLY, "loop": set(), "401": set(), "403": set(), "500": set(),
    "flaky": PRIVATE_ONLY, "agents": PRIVATE_ONLY, "delay": PRIVATE_ONLY,
    "sitemap": PRIVATE_ONLY, "slow": PRIVATE_ONLY,
}


def robots_host(variant: str) -> str:
    return f"robots-{variant}.test"


def follow_redirects(web, host: str, path: str, limit: int = 10) -> list[tuple[str, int]]:
    """(path, status) of each answer, following ``Location`` on the same port."""
    hops = []
    for _ in range(limit):
        status, headers, _ = get(web, host, path)
        hops.append((path, status))
        if status not in (301, 302, 307, 308):
            break
        path = target_of(urljoin(web.url(host, path), headers["Location"]))
    return hops


def test_robots_hosts_are_served_and_resolvable_but_linked_from_nowhere(web, truth):
    assert web.robots_hosts() == [robots_host(variant) for variant in EXPECTED_DISALLOWED]
    hosts = web.hosts_file.read_text()
    for host in web.robots_hosts():
        assert f"127.0.0.1\t{host}\n" in hosts
        status, _, body = get(web, host, "/")
        assert status == 200 and all(f'href="{path}"'.encode() in body for path in ROBOTS_SITE[1:])
    assert not any(urlsplit(url).hostname.startswith("robots-") for url in truth.fetched | truth.robots)


def test_bom_robots_has_a_bom_and_crlf_lines(web):
    status, _, body = get(web, robots_host("bom"), "/robots.txt")
    assert status == 200 and body == b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /private/\r\n"
    # the fixture discriminates: a parser that keeps the BOM misses the group
    assert Protego.parse(body.decode()).can_fetch(web.url(robots_host("bom"), "/private/secret.html"), USER_AGENT)


def test_big_robots_puts_a_rule_past_the_500_kib_cut(web):
    status, headers, body = get(web, robots_host("big"), "/robots.txt")
    assert status == 200 and 590_000 < len(body) < 620_000
    assert body.startswith(b"User-agent: *\nDisallow: /private/\n")
    assert body.index(b"\nDisallow: /p/\n") > 524288 and b"Disallow: /p/" not in body[:512000]
    page = web.url(robots_host("big"), "/p/1.html")
    assert Protego.parse(body[:512000].decode()).can_fetch(page, USER_AGENT)
    assert not Protego.parse(body.decode()).can_fetch(page, USER_AGENT)


def test_non_text_robots_is_a_png_that_looks_like_rules(web):
    status, headers, body = get(web, robots_host("html"), "/robots.txt")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert body.startswith(b"\x89PNG\r\n\x1a\n") and body.endswith(b"IEND\xaeB`\x82")
    rules = Protego.parse(body.decode("utf-8", "replace"))  # what a crawler ignoring the type reads
    assert not rules.can_fetch(web.url(robots_host("html"), "/private/secret.html"), USER_AGENT)


def test_robots_redirect_reaches_the_real_robots_on_the_same_host(web):
    hops = follow_redirects(web, robots_host("redirect"), "/robots.txt")
    assert hops == [("/robots.txt", 301), ("/real-robots.txt", 200)]
    assert get(web, robots_host("redirect"), "/real-robots.txt")[2] == b"User-agent: *\nDisallow: /private/\n"


def test_robots_redirect_chain_is_exactly_five_redirects(web):
    hops = follow_redirects(web, robots_host("redirect5"), "/robots.txt")
    assert [status for _, status in hops] == [301, 302, 307, 308, 301, 200]
    assert get(web, robots_host("redirect5"), hops[-1][0])[2] == b"User-agent: *\nDisallow: /private/\n"
    assert get(web, robots_host("redirect5"), "/robots-2.txt")[1]["Location"].startswith("http://")


def test_robots_redirect_loop_never_ends(web):
    hops = follow_redirects(web, robots_host("loop"), "/robots.txt", limit=6)
    assert [path for path, _ in hops] == ["/robots.txt", "/robots2.txt"] * 3
    assert {status for _, status in hops} == {302}


@pytest.mark.parametrize("variant", ["401", "403", "500"])
def test_robots_error_hosts_answer_their_status_every_time(web, variant):
    assert [get(web, robots_host(variant), "/robots.txt")[0] for _ in range(3)] == [int(variant)] * 3
    assert get(web, robots_host(variant), "/p/1.html")[0] == 200


def test_flaky_robots_answers_503_until_its_failures_are_used_up(web):
    web.reset()
    host, failures = robots_host("flaky"), CONFIG.robots_flaky_failures
    statuses = [get(web, host, "/robots.txt")[0] for _ in range(failures + 2)]
    assert statuses == [503] * failures + [200, 200]
    assert get(web, host, "/robots.txt")[2] == b"User-agent: *\nDisallow: /private/\n"
    logged = [e.status for e in web.entries() if e.host == host and e.path == "/robots.txt"]
    assert logged[-(failures + 3):] == statuses + [200]
    web.reset()
    assert get(web, host, "/robots.txt")[0] == (503 if failures else 200)


def test_flaky_robots_failures_come_from_the_config(start_web):
    web = start_web(hosts=2, pages=2, robots_flaky_failures=1)
    assert [get(web, robots_host("flaky"), "/robots.txt")[0] for _ in range(3)] == [503, 200, 200]
    assert get(web, robots_host("flaky"), "/p/1.html")[0] == 200


def test_agents_robots_groups_by_exact_product_token(web):
    host = robots_host("agents")
    body = get(web, host, "/robots.txt")[2].decode()
    assert body.index("User-agent: WebCrawler-News") < body.index("User-agent: webcrawler\n")
    rules = Protego.parse(body)
    ours = {path for path in ROBOTS_SITE if not rules.can_fetch(web.url(host, path), USER_AGENT)}
    assert ours == PRIVATE_ONLY
    assert not rules.can_fetch(web.url(host, "/"), "otherbot/2.0")
    assert not rules.can_fetch(web.url(host, "/p/1.html"), "somebot/1.0")
    assert not rules.can_fetch(web.url(host, "/allowed.html"), "webcrawler-news/1.0")


def test_delay_robots_gives_our_group_its_own_crawl_delay(web):
    assert web.crawl_delays()[robots_host("delay")] == 0.5
    assert web.crawl_delays("somebot")[robots_host("delay")] == 2.0


def test_sitemap_robots_lists_two_sitemaps_with_unlinked_pages(web):
    import xml.etree.ElementTree as ElementTree  # noqa: PLC0415 - only this test parses XML

    host = robots_host("sitemap")
    rules = Protego.parse(get(web, host, "/robots.txt")[2].decode())
    sitemaps = list(rules.sitemaps)
    assert sitemaps == [web.url(host, "/sitemap.xml"), web.url(host, "/sitemap-pages.xml")]
    namespace = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    listed = []
    for sitemap in sitemaps:
        status, headers, body = get(web, host, target_of(sitemap))
        root = ElementTree.fromstring(body)
        assert status == 200 and root.tag == f"{namespace}urlset"
        listed += [loc.text for loc in root.iter(f"{namespace}loc")]
    assert listed == sitemap_locations(SiteModel(CONFIG, web.port))
    assert listed[:3] == [web.url(host, f"/s/{n}.html") for n in (1, 2, 3)]
    assert all(get(web, host, target_of(url))[0] == 200 for url in listed)
    assert b"/s/" not in get(web, host, "/")[2]


def test_slow_robots_is_delayed_and_its_pages_are_not(web):
    host = robots_host("slow")
    assert get(web, host, "/robots.txt")[0] == get(web, host, "/p/2.html")[0] == 200
    entries = {e.path: e for e in web.entries() if e.host == host}
    robots, page = entries["/robots.txt"], entries["/p/2.html"]
    assert robots.end - robots.start >= CONFIG.slow_delay * 0.95
    assert page.end - page.start < CONFIG.slow_delay / 2


# --- ground truth for the robots hosts ------------------------------------------------

@pytest.mark.parametrize("variant", list(EXPECTED_DISALLOWED))
def test_truth_of_each_robots_host_follows_rfc_9309(web, variant):
    host = robots_host(variant)
    truth = web.truth(seeds=[web.url(host)])
    disallowed = {web.url(host, path) for path in EXPECTED_DISALLOWED[variant]}
    assert truth.disallowed == disallowed
    assert truth.fetched == {web.url(host, path) for path in ROBOTS_SITE} - disallowed
    assert web.url(host, "/robots.txt") in truth.robots


def test_truth_of_an_unreachable_robots_follows_the_5xx_policy(web):
    root = web.url(robots_host("500"))
    truth = web.truth(seeds=[root], robots_5xx="disallow")
    assert truth.fetched == set() and truth.disallowed == {root}


def test_truth_robots_urls_include_redirect_hops(web):
    host = robots_host("redirect5")
    truth = web.truth(seeds=[web.url(host)])
    assert {web.url(host, f"/robots-{n}.txt") for n in range(1, 6)} <= truth.robots
    loop = robots_host("loop")
    assert web.truth(seeds=[web.url(loop)]).robots == {web.url(loop, "/robots.txt"), web.url(loop, "/robots2.txt")}


def test_truth_of_all_robots_hosts_seeded_together_is_the_union(web):
    together = web.truth(seeds=[web.url(host) for host in web.robots_hosts()])
    for host in web.robots_hosts():
        alone = web.truth(seeds=[web.url(host)])
        assert {url for url in together.fetched if urlsplit(url).hostname == host} == alone.fetched


def test_truth_seeded_with_sitemap_pages_still_obeys_robots(web):
    host = robots_host("sitemap")
    truth = web.truth(seeds=[web.url(host), *sitemap_locations(web.model)])
    assert {web.url(host, f"/s/{n}.html") for n in (1, 2, 3)} <= truth.fetched
    assert truth.disallowed == {web.url(host, "/private/secret.html")}


class RedirectChainModel:
    """A narrow fake of SiteModel: robots.txt is ``redirects`` redirects from its rules."""

    def __init__(self, redirects: int) -> None:
        self.redirects = redirects

    def url(self, host: str, path: str) -> str:
        return f"http://{host}{path}"

    def page(self, host: str, target: str) -> Page:
        number = 0 if target == "/robots.txt" else int(target.removeprefix("/hop-").removesuffix(".txt"))
        if number < self.redirects:
            return Page(301, location=f"/hop-{number + 1}.txt")
        return Page(200, "text/plain", b"User-agent: *\nDisallow: /\n")


def test_five_redirects_are_followed_and_a_sixth_makes_robots_unavailable():
    five = fetch_robots(RedirectChainModel(5), "a.test")  # type: ignore[arg-type]
    assert five.status == 200 and five.text and len(five.urls) == 6
    six = fetch_robots(RedirectChainModel(6), "a.test")  # type: ignore[arg-type]
    assert six.status == 0 and six.text is None and not six.unreachable and len(six.urls) == 6
