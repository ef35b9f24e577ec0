"""HTML parsers on pages of real weight: our one libxml2 parse against
lexbor (selectolax) and Scrapy's link extractor, per page, and whether
lexbor finds the same links and text.

Corpora: ``--heavy`` pages of the heavy-page test web (:mod:`testweb.heavy`,
20-100 links each) and up to ``--real`` HTML files of each real
documentation site the real-web tests serve (:data:`testweb.realweb.SITES`,
from their Debian packages). Per page, the minimum over ``--runs`` passes of
the mean time (the machine is noisy):

* ``ours``: :func:`extensions.processors.parsedpage.parse_page` with its
  text: decode, libxml2 tree, link elements, tag counts, visible text;
* ``ours, tree only``: :func:`extensions.contentseen.text.text_tree`;
* ``lexbor, tree only`` and ``lexbor, all``: selectolax's
  ``LexborHTMLParser``, then tag counts, ``a``/``area`` hrefs and the text
  without script, style, noscript and template;
* ``Scrapy LinkExtractor``: stock Scrapy's ``LinkExtractor`` on an
  ``HtmlResponse`` (links only, through parsel and lxml).

Agreement: pages whose ``a``/``area`` hrefs (in document order) and visible
words equal ours.

    python -m bench.html_parsers --out bench/results/html_parsers.txt
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from selectolax.lexbor import LexborHTMLParser

from extensions.contentseen.text import DROPPED_ELEMENTS, text_tree
from extensions.processors.parsedpage import parse_page
from testweb.heavy import heavy_page
from testweb.model import Link, NavItem
from testweb.realweb import SITES

MAX_BYTES = 10 * 1024 * 1024


def heavy_pages(count: int) -> list[bytes]:
    rng = random.Random(1)
    nav = [NavItem(f"/s/{i}.html", f"Section {i}") for i in range(8)]
    return [heavy_page(rng, f"Page {n}", [Link(f"/p/{rng.randrange(10_000)}.html")
                                          for _ in range(rng.randint(20, 100))], nav)
            for n in range(count)]


def real_pages(per_site: int) -> list[bytes]:
    pages = []
    for site in SITES:
        files = sorted(Path(site.document_root).rglob("*.html"))
        if not files:
            raise SystemExit(f"no HTML under {site.document_root}: install {site.package} (make test does)")
        pages += [path.read_bytes() for path in files[:per_site]]
    return pages


def ours(body: bytes) -> tuple[list[str], list[str]]:
    page = parse_page(body, "utf-8", MAX_BYTES, text=True)
    hrefs = [element.get("href") for element in page.link_elements
             if element.tag in ("a", "area") and element.get("href") is not None]
    return hrefs, (page.text or "").split()


def lexbor(body: bytes) -> tuple[list[str], list[str]]:
    tree = LexborHTMLParser(body)
    _tags = Counter(node.tag for node in tree.root.traverse()) if tree.root is not None else Counter()
    hrefs = [node.attributes.get("href") for node in tree.css("a[href], area[href]")]
    tree.strip_tags(list(DROPPED_ELEMENTS))
    text = tree.root.text(deep=True, separator=" ") if tree.root is not None else ""
    return [href or "" for href in hrefs], text.split()


def scrapy_links(body: bytes) -> list[str]:
    response = HtmlResponse("http://docs.test/page.html", body=body, encoding="utf-8")
    return [link.url for link in EXTRACTOR.extract_links(response)]


EXTRACTOR = LinkExtractor()


def per_page(function: Callable[[bytes], object], pages: list[bytes], runs: int) -> float:
    """Microseconds a page: the best of ``runs`` passes."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for body in pages:
            function(body)
        best = min(best, (time.perf_counter() - started) / len(pages))
    return best * 1e6


def table(name: str, pages: list[bytes], runs: int) -> list[str]:
    sizes = sorted(len(body) for body in pages)
    rows = [("ours: libxml2 tree, links, tags, text", ours),
            ("ours, tree only", lambda b: text_tree(b, "utf-8")),
            ("lexbor (selectolax), tree only", LexborHTMLParser),
            ("lexbor: tree, links, tags, text", lexbor),
            ("Scrapy LinkExtractor (links only)", scrapy_links)]
    timed = {label: per_page(function, pages, runs) for label, function in rows}
    same_links = same_text = 0
    for body in pages:
        our_links, our_words = ours(body)
        their_links, their_words = lexbor(body)
        same_links += our_links == their_links
        same_text += our_words == their_words
    lines = [f"{name}: {len(pages)} pages, median {sizes[len(sizes) // 2] / 1024:.1f} KB, "
             f"mean {sum(sizes) / len(sizes) / 1024:.1f} KB",
             f"{'':40} {'us/page':>9} {'vs ours':>8}"]
    for label, value in timed.items():
        lines.append(f"{label:40} {value:>9.0f} {value / timed[rows[0][0]]:>8.2f}")
    lines.append(f"lexbor's a/area hrefs equal to ours on {same_links} of {len(pages)} pages, "
                 f"its visible words on {same_text}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heavy", type=int, default=300, help="heavy test-web pages")
    parser.add_argument("--real", type=int, default=300, help="HTML files of each documentation site")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    lines = table("heavy-page test web", heavy_pages(args.heavy), args.runs)
    lines += [""] + table("real documentation pages", real_pages(args.real), args.runs)
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = f"python -m bench.html_parsers --heavy {args.heavy} --real {args.real} --runs {args.runs}"
        args.out.write_text(f"{command}\n\n{text}\n")


if __name__ == "__main__":
    main()
