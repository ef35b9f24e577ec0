"""HTML pages to compare a new page-processing path with the old one on:
the synthetic test web's pages (every kind it serves: encodings, ``<base>``,
nofollow, frames, near-duplicates) and real documentation pages installed
by Debian packages (Sphinx, DocBook, Django's and Node's docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testweb.model import SiteModel, WebConfig
from testweb.truth import fetched_html_pages

#: Where Debian installs documentation HTML (python-django-doc,
#: debian-reference-en, nodejs-doc, sphinx-doc, ...).
DOC_ROOT = Path("/usr/share/doc")


def synthetic_pages(hosts: int = 30, pages: int = 30) -> list[tuple[str, bytes, str]]:
    """``(url, body, encoding)`` of every 200 HTML page a crawl of a small
    test web fetches, in URL order."""
    return fetched_html_pages(SiteModel(WebConfig(hosts=hosts, pages=pages), port=8080))


def real_pages(every: int = 1, root: Path = DOC_ROOT) -> list[tuple[str, bytes, str]]:
    """``(url, body, "utf-8")`` of every ``every``-th documentation HTML
    file under ``root`` (sorted by path). None installed fails the calling
    test: ``make test`` installs them (the Makefile's ``REALWEB_PACKAGES``)."""
    files = sorted(path for path in root.rglob("*.html") if path.is_file())
    if not files:
        pytest.fail(f"no documentation HTML under {root}: install the Makefile's REALWEB_PACKAGES "
                    "(make test does)", pytrace=False)
    return [(f"http://docs.test{path}", path.read_bytes(), "utf-8") for path in files[::every]]
