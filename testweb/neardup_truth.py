"""Near-duplicate ground truth of the synthetic web, as labelled page pairs.

:class:`~testweb.truth.Truth` lists the pages a crawl fetches, the
mirror's byte copies (``duplicates``) and the designed near-duplicates
(``near_duplicates``: the news print and copy pages). A detector is scored
on pairs of fetched 2xx HTML pages (the streamed big page excluded):

* positive, designed to be near duplicates: every ``duplicates`` and
  ``near_duplicates`` pair of the truth;
* negative, designed to be different: every other pair, except
* unlabelled: two pages of one *template family*, pages built from one fixed
  text that differ only in numbers or ids (the news originals and their
  copies, trap calendar months, trap ``deep`` levels, trap carts, slow
  pages, error pages). Their visible texts differ in a few digits, so from
  the content alone ``/news/1.html`` and ``/news/2.html`` are as near as
  ``/news/1.html`` and its print copy; the model does not say which of them
  are one document, so they are scored neither way.

Pure: a function of the model, no server. Pages come from
``SiteModel.page(host, target)``. With them, the exact figures the
detector's estimates are checked against: :func:`exact_resemblance` (what a
sketch estimates) and :func:`expected_candidates` (an index's look-up cost).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from urllib.parse import urlsplit

import numpy as np

from extensions.contentseen.nearindex import BlockLayout
from extensions.contentseen.simhash import sorted_unique
from testweb.model import SLOW_HOST, SPECIAL_HOST, TRAP_HOST, Page, SiteModel
from testweb.truth import Truth, compute_truth

FAMILIES = (  # (family, host, path pattern) of pages built from one fixed text
    ("news", SPECIAL_HOST, r"/news/\d+(-print|-copy)?\.html"),
    ("calendar", TRAP_HOST, r"/cal/\d+/\d+"),
    ("deep", TRAP_HOST, r"/deep/(a/)+"),
    ("cart", TRAP_HOST, r"/shop/cart\.html\?sid=[0-9a-f]+"),
    ("slow", SLOW_HOST, r"/\d+\.html"),
    ("error", SPECIAL_HOST, r"/error/\d+\.html"),
)


def split_url(url: str) -> tuple[str, str]:
    """(host, target) of an absolute URL, as ``SiteModel.page`` takes them."""
    parts = urlsplit(url)
    return parts.hostname or "", url[len(parts.scheme) + 3 + len(parts.netloc):] or "/"


def family(url: str) -> str | None:
    """The template family of ``url``'s page, if it belongs to one."""
    host, target = split_url(url)
    for name, family_host, pattern in FAMILIES:
        if host == family_host and re.fullmatch(pattern, target):
            return name
    return None


@dataclass
class NearDuplicateTruth:
    """Scored pages and their labelled pairs (see the module docstring)."""

    pages: dict[str, Page]  # URL -> page, in crawl (breadth-first) order
    positives: set[frozenset[str]] = field(default_factory=set)
    exact: set[frozenset[str]] = field(default_factory=set)  # the byte-identical positives

    def label(self, first: str, second: str) -> bool | None:
        """True for a designed near-duplicate pair, False for a designed
        different one, None for two pages of one template family."""
        pair = frozenset((first, second))
        if pair in self.positives:
            return True
        same_family = family(first)
        if same_family is not None and same_family == family(second):
            return None
        return False

    def labelled_pairs(self) -> Iterator[tuple[str, str, bool]]:
        """Every labelled pair of scored pages with its label."""
        for first, second in combinations(self.pages, 2):
            label = self.label(first, second)
            if label is not None:
                yield first, second, label


def near_duplicate_truth(model: SiteModel, truth: Truth | None = None) -> NearDuplicateTruth:
    """The scored pages of ``model``'s crawl and its designed near-duplicate pairs."""
    truth = truth or compute_truth(model)
    ordered = sorted(truth.fetched, key=lambda url: (truth.depth[url], url))
    pages = {}
    for url in ordered:
        page = model.page(*split_url(url))
        if 200 <= page.status < 300 and page.is_html and page.stream is None:
            pages[url] = page
    result = NearDuplicateTruth(pages)
    for copy, original in (*truth.duplicates.items(), *truth.near_duplicates.items()):
        if copy in pages and original in pages:
            result.positives.add(frozenset((copy, original)))
            if copy in truth.duplicates:
                result.exact.add(frozenset((copy, original)))
    return result


def exact_resemblance(first: np.ndarray, second: np.ndarray) -> float:
    """The exact resemblance of two shingle sets
    (:func:`~extensions.contentseen.simhash.shingle_set` output)."""
    union = len(sorted_unique(np.concatenate((first, second))))
    return len(np.intersect1d(first, second, assume_unique=True)) / union if union else 0.0


def expected_candidates(layout: BlockLayout, stored: int) -> float:
    """Random-query candidates per look-up in an index of ``layout`` with ``stored`` uniform simhashes."""
    return sum(stored / 2 ** sum(layout.block_bits[b][1] for b in table) for table in layout.tables)
