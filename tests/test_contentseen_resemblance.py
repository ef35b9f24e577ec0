"""Honest content-seen verdicts (issue 12): resemblance sketches, the
resemblance check before a near-duplicate flag, the minimum number of
shingles, and byte fingerprints for pages without visible text."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import NearDuplicateIndex
from extensions.contentseen.fingerprint import NORMALISED
from extensions.contentseen.resemblance import (
    SKETCH_SIZE,
    near_features,
    resemblance,
    sketch_of,
)
from extensions.contentseen.simhash import shingle_set
from extensions.contentseen.features import content_features
from extensions.pipelines.contentseen import ContentSeenPipeline
from testweb.neardup_truth import exact_resemblance

FRAMESET_A = b'<html><frameset cols="50%,50%"><frame src="/a1.html"><frame src="/a2.html"></frameset></html>'
FRAMESET_B = b'<html><frameset cols="50%,50%"><frame src="/b1.html"><frame src="/b2.html"></frameset></html>'
IMAGES = b'<html><body><a href="/c1.html"><img src="/c.png" alt=""></a></body></html>'


def words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
            for _ in range(count)]


def edited(rng: random.Random, text: list[str], share: float) -> list[str]:
    copy = list(text)
    for position in rng.sample(range(len(copy)), int(share * len(copy))):
        copy[position] = f"x{rng.randrange(10**9)}"
    return copy


def test_a_short_page_sketch_is_its_whole_set_so_the_estimate_is_exact():
    rng = random.Random(1)
    first = words(rng, 30)
    second = first[:20] + words(rng, 10)
    sets = [shingle_set(" ".join(text)) for text in (first, second)]
    assert len(sets[0]) < SKETCH_SIZE
    assert resemblance(sketch_of(sets[0]), sketch_of(sets[1])) == exact_resemblance(*sets)


@pytest.mark.parametrize("share", [0.02, 0.1, 0.3])
def test_the_estimate_is_close_to_the_true_resemblance_on_long_pages(share):
    rng = random.Random(int(share * 100))
    errors = []
    for _ in range(40):
        text = words(rng, 2000)
        sets = [shingle_set(" ".join(page)) for page in (text, edited(rng, text, share))]
        errors.append(resemblance(sketch_of(sets[0]), sketch_of(sets[1])) - exact_resemblance(*sets))
    assert abs(sum(errors) / len(errors)) < 0.04  # unbiased
    assert max(map(abs, errors)) < 0.25  # a few standard deviations of a 64-value sketch


def test_unrelated_pages_do_not_resemble_and_a_page_resembles_itself():
    rng = random.Random(3)
    first, second = (sketch_of(shingle_set(" ".join(words(rng, 500)))) for _ in range(2))
    assert resemblance(first, second) < 0.1
    assert resemblance(first, first) == 1.0
    assert resemblance(b"", first) == 0.0


def test_tables_of_numbers_are_not_near_duplicates(tmp_path):
    """Issue 12: with digits folded, shingles counted with multiplicity and
    no resemblance check, pages of tables drifted to one simhash and were
    flagged. The candidate simhash still folds digits (so they are
    candidates); the sketch, where numbers are tokens, refuses them."""
    rng = random.Random(4)
    tables = [" ".join(f"{rng.randrange(10**6)} {rng.randrange(10**4)} {rng.random():.3f}" for _ in range(300))
              for _ in range(2)]
    first, second = (near_features(text) for text in tables)
    assert resemblance(first.sketch, second.sketch) < 0.05
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3") as index:
        index.add_or_match(first.simhash, "http://a.test/", first.sketch)
        assert index.add_or_match(second.simhash, "http://b.test/", second.sketch)[1] is None


def test_a_simhash_candidate_that_does_not_resemble_is_not_a_near_duplicate(tmp_path):
    rng = random.Random(5)
    index = NearDuplicateIndex.open(tmp_path / "near.sqlite3", buffer_entries=4)
    original = near_features(" ".join(words(rng, 400)))
    unrelated = near_features(" ".join(words(rng, 400)))
    group, near = index.add_or_match(original.simhash, "http://a.test/", original.sketch)
    # the same simhash (a collision), another text: judged, not flagged
    assert index.add_or_match(original.simhash, "http://b.test/", unrelated.sketch)[1] is None
    assert index.stats()["dissimilar"] == 1
    close = index.add_or_match(original.simhash ^ 1, "http://c.test/", original.sketch)
    assert close == (group, "http://a.test/")
    assert index.add_or_match(original.simhash ^ 1, "http://b2.test/", unrelated.sketch)[1] == "http://b.test/"
    index.flush()  # the check also holds for candidates read from disk
    third = near_features(" ".join(words(rng, 400)))
    assert index.add_or_match(original.simhash ^ 2, "http://d.test/", third.sketch)[1] is None
    assert index.add_or_match(original.simhash ^ 4, "http://e.test/", original.sketch)[1] == "http://a.test/"
    index.close()


def test_an_index_written_before_sketches_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "old.sqlite3"
    NearDuplicateIndex.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE near_meta SET value = '1' WHERE key = 'schema'")
    db.close()
    with pytest.raises(ContentStoreError, match=r"old\.sqlite3 has schema='1', expected '2'.*JOBDIR"):
        NearDuplicateIndex.open(path)


def test_pages_without_visible_text_are_fingerprinted_by_their_bytes():
    def body_fingerprint(body: bytes) -> int:
        return content_features(body, "utf-8", "text/html", mode=NORMALISED, near=False).fingerprint

    empty_a = body_fingerprint(FRAMESET_A)
    assert empty_a != body_fingerprint(FRAMESET_B)
    assert empty_a != body_fingerprint(IMAGES)
    assert empty_a == body_fingerprint(FRAMESET_A)
    # pages with text still ignore markup
    assert body_fingerprint(b"<p>same words</p>") == body_fingerprint(b"<div>same  words</div>")


def pipeline(tmp_path: Path, **settings: Any) -> tuple[ContentSeenPipeline, Any]:
    crawler = get_crawler(Spider, {"CONTENTSEEN_BACKEND": "sqlite", "JOBDIR": str(tmp_path),
                                   "CONTENTSEEN_FLUSH_INTERVAL": 0, **settings})
    crawler.engine = SimpleNamespace(scheduler=None)  # no frontier: groups are not recorded
    crawler.stats.open_spider()
    component = ContentSeenPipeline.from_crawler(crawler)
    component.open_spider()
    return component, crawler.stats


def judge(component: ContentSeenPipeline, url: str, body: bytes) -> PageItem:
    item = PageItem(url=url, status=200, content_type="text/html; charset=utf-8",
                    content_features=content_features(body, "utf-8", "text/html"))
    return component.process_item(item)


def test_two_different_pages_without_text_are_not_duplicates_in_the_pipeline(tmp_path):
    component, stats = pipeline(tmp_path)
    verdicts = [judge(component, f"http://x.test/{n}", body).get("duplicate_of")
                for n, body in enumerate((FRAMESET_A, FRAMESET_B, IMAGES))]
    again = judge(component, "http://y.test/", FRAMESET_A)
    component.close()
    assert verdicts == [None, None, None]
    assert again["duplicate_of"] == "http://x.test/0"  # the same bytes still are
    assert stats.get_value("contentseen/empty_text") == 4


def test_short_pages_are_not_judged_for_near_duplication_and_are_counted(tmp_path):
    component, stats = pipeline(tmp_path, CONTENTSEEN_NEAR_MIN_SHINGLES=10)
    short = judge(component, "http://x.test/short", b"<p>calendar 2026 11 no events</p>")
    rng = random.Random(6)
    text = " ".join(words(rng, 300))
    long_page = judge(component, "http://x.test/long", f"<p>{text}</p>".encode())
    copy = judge(component, "http://x.test/copy", f"<p>{text} postscript</p>".encode())
    component.close()
    assert "simhash" not in short and "simhash" in long_page
    assert stats.get_value("contentseen/near_too_short") == 1
    assert copy["near_duplicate_of"] == "http://x.test/long"
