"""Precision and recall of the near-duplicate test on real and synthetic pages (issue 12).

Pages:

* *real*: the HTML of Debian's documentation packages installed here
  (sphinx-doc, python-django-doc, nodejs-doc, debian-reference-en), read from
  disk in path order, as a crawl of those sites would judge them;
* *test web*: the synthetic web's fetched HTML pages in crawl order
  (:mod:`testweb.neardup_truth`), whose designed pairs are also scored.

Each page goes through what the pipeline does (:mod:`extensions.pipelines.contentseen`):
visible text (the first ``CONTENTSEEN_MAX_TEXT_BYTES`` of the body), the
exact test on the normalised text (bytes when it is empty; an exact copy is
not judged for near-duplication), then the near-duplicate index. Features:

* ``old``: main before issue 12: digits folded to ``0``, shingles counted
  with multiplicity, no resemblance check, every page judged;
* ``new``: distinct shingles, numbers as tokens, pages under
  ``CONTENTSEEN_NEAR_MIN_SHINGLES`` distinct shingles not judged, a flag only
  when the sketch's resemblance estimate reaches
  ``CONTENTSEEN_NEAR_MIN_RESEMBLANCE``.

Truth is the resemblance ``|A & B| / |A | B|`` of the two pages' sets of
distinct word 3-shingles (numbers as tokens, the same visible text).

* precision: the share of flags (a page and the page it is marked a
  near-duplicate of) whose resemblance is >= 0.5;
* recall at ``T``: among pairs of judged, non-identical pages with
  resemblance >= ``T``, the share the detector put in one group. Every pair
  is considered: a 128-permutation MinHash estimate over all pairs picks
  those estimated >= 0.3 (a pair truly at 0.5 falls under that with
  probability below 1e-4), and their resemblance is then computed exactly.

    python -m bench.neardup_quality                 # both feature sets, both page sets
    python -m bench.neardup_quality --out bench/results/neardup_quality.txt
    python -m bench.neardup_quality --redis         # the same verdicts from the Redis sets
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from testweb.model import SiteModel, WebConfig
from testweb.neardup_truth import exact_resemblance, near_duplicate_truth
from extensions import defaults
from extensions.backends.redis.contentseen import RedisContentSeen, RedisContentStore
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from testweb.redisserver import RedisServer
from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import BlockLayout, NearDuplicateIndex
from extensions.contentseen.text import visible_text
from extensions.contentseen.fingerprint import bytes_fingerprint, text_fingerprint
from extensions.contentseen.resemblance import near_features
from extensions.contentseen.simhash import (
    _fmix64,
    normalised_bytes,
    shingle_hashes,
    shingle_set,
    simhash_of,
    token_hashes,
)


def multiset_simhash(text: str) -> int:
    """The earlier feature: digits folded, every shingle counted with its multiplicity."""
    with np.errstate(over="ignore"):
        return simhash_of(shingle_hashes(token_hashes(normalised_bytes(text, fold_digits=True))))

DOC_DIRS = (
    "/usr/share/doc/sphinx-doc/html",
    "/usr/share/doc/python-django-doc/html",
    "/usr/share/doc/nodejs/api",
    "/usr/share/debian-reference",
)
PERMUTATIONS = 128
PREFILTER = 0.3
THRESHOLDS = (0.5, 0.8, 0.9)
FEATURES = ("old", "new")


def real_pages() -> Iterator[tuple[str, bytes]]:
    for directory in DOC_DIRS:
        root = Path(directory)
        for path in sorted(root.rglob("*.html")):
            if path.is_file():
                yield f"file://{path}", path.read_bytes()


def test_web_pages() -> tuple[Iterator[tuple[str, bytes]], object]:
    truth = near_duplicate_truth(SiteModel(WebConfig(), 8000))
    return ((url, page.body) for url, page in truth.pages.items()), truth


@dataclass
class Verdicts:
    """What the detector said about each page, in crawl order."""

    features: str
    texts: dict[str, str] = field(default_factory=dict)  # judged pages (not exact copies)
    groups: dict[str, int] = field(default_factory=dict)
    flags: list[tuple[str, str]] = field(default_factory=list)  # (page, near_duplicate_of)
    exact_copies: int = 0
    too_short: int = 0
    seconds: float = 0.0


def judge(pages: list[tuple[str, bytes]], features: str, directory: Path, redis_url: str | None = None) -> Verdicts:
    """Replay the pipeline's verdicts over ``pages`` (on the SQLite sets, or
    the Redis ones at ``redis_url`` as a crawl's worker thread uses them)."""
    verdicts = Verdicts(features)
    if redis_url is None:
        exact: Any = ContentSeen.open(directory / f"{features}.sqlite3")
        near: Any = NearDuplicateIndex.open(directory / f"{features}.near.sqlite3")
    else:
        prefix = f"quality-{features}-{len(pages)}"
        exact = RedisContentSeen(RedisContentStore(redis_url, prefix, flush_on_start=True))
        near = RedisNearDuplicateIndex(RedisContentStore(redis_url, prefix), BlockLayout())
    min_shingles = defaults.CONTENTSEEN_NEAR_MIN_SHINGLES
    started = time.perf_counter()
    for url, body in pages:
        text = visible_text(body[:defaults.CONTENTSEEN_MAX_TEXT_BYTES], "utf-8")
        fingerprint = text_fingerprint(text) if text else bytes_fingerprint(body)
        if exact.duplicate_of(fingerprint, url) is not None:
            verdicts.exact_copies += 1
            continue
        if not text:
            continue
        if features == "old":
            group, near_of = near.add_or_match(multiset_simhash(text), url)
        else:
            found = near_features(text)
            if found.shingles < min_shingles:
                verdicts.too_short += 1
                continue
            if redis_url is None:
                group, near_of = near.add_or_match(found.simhash, url, found.sketch)
            else:  # the record keeps the content fingerprint, as in a crawl
                group, near_of = near.run(near.add_or_match_steps(found.simhash, url, found.sketch, None,
                                                                  fingerprint))
        verdicts.texts[url] = text
        verdicts.groups[url] = group
        if near_of is not None and near_of != url:
            verdicts.flags.append((url, near_of))
    verdicts.seconds = time.perf_counter() - started
    exact.close()
    near.close()
    return verdicts


def minhashes(shingles: np.ndarray) -> np.ndarray:
    """``PERMUTATIONS`` minimum hashes of one shingle set (the empty set: all ones)."""
    seeds = (np.arange(1, PERMUTATIONS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    if len(shingles) == 0:
        return np.full(PERMUTATIONS, np.iinfo(np.uint64).max, dtype=np.uint64)
    result = np.full(PERMUTATIONS, np.iinfo(np.uint64).max, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, len(shingles), 4096):
            block = _fmix64(shingles[start:start + 4096, None] ^ seeds[None, :])
            np.minimum(result, block.min(axis=0), out=result)
    return result


def similar_pairs(sets: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    """Exact resemblance of every pair estimated >= ``PREFILTER`` (keys in ``sets`` order)."""
    urls = list(sets)
    signatures = np.stack([minhashes(sets[url]) for url in urls])
    found = {}
    for row in range(len(urls)):
        estimates = (signatures[row + 1:] == signatures[row]).mean(axis=1)
        for offset in np.flatnonzero(estimates >= PREFILTER):
            found[(urls[row], urls[row + 1 + offset])] = exact_resemblance(
                sets[urls[row]], sets[urls[row + 1 + offset]])
    return found


def score(verdicts: Verdicts, sets: dict[str, np.ndarray],
          pairs: dict[tuple[str, str], float]) -> dict[str, object]:
    """The table row of one detector run."""
    flags = [exact_resemblance(sets[page], sets[original]) for page, original in verdicts.flags]
    row: dict[str, object] = {
        "judged": len(verdicts.texts), "too short": verdicts.too_short, "exact copies": verdicts.exact_copies,
        "flags": len(flags), "flags >= 0.5": sum(value >= 0.5 for value in flags),
        "min flag r": min(flags) if flags else float("nan"),
        "ms/page": 1000 * verdicts.seconds / max(len(verdicts.texts) + verdicts.too_short, 1),
    }
    row["precision"] = row["flags >= 0.5"] / len(flags) if flags else float("nan")
    groups = verdicts.groups
    for threshold in THRESHOLDS:
        truly = [(a, b) for (a, b), value in pairs.items() if value >= threshold]
        grouped = sum(a in groups and b in groups and groups[a] == groups[b] for a, b in truly)
        row[f"pairs >= {threshold}"] = len(truly)
        row[f"recall {threshold}"] = grouped / len(truly) if truly else float("nan")
    return row


def designed_scores(verdicts: Verdicts, truth: object) -> str:
    """The test web's labelled pairs: designed positives found, negatives grouped."""
    groups = verdicts.groups
    positives = [tuple(pair) for pair in truth.positives - truth.exact]  # type: ignore[attr-defined]
    found = sum(a in groups and b in groups and groups[a] == groups[b] for a, b in positives)
    false = 0
    by_group: dict[int, list[str]] = {}
    for url, group in groups.items():
        by_group.setdefault(group, []).append(url)
    for members in by_group.values():
        for i, first in enumerate(members):
            for second in members[i + 1:]:
                false += truth.label(first, second) is False  # type: ignore[attr-defined]
    return (f"designed near-duplicate pairs grouped: {found}/{len(positives)}; "
            f"designed-different pairs grouped: {false}")


COLUMNS = ("features", "judged", "too short", "exact copies", "flags", "flags >= 0.5", "precision",
           "min flag r", *(f"pairs >= {t}" for t in THRESHOLDS), *(f"recall {t}" for t in THRESHOLDS),
           "ms/page")


def table(title: str, rows: list[dict[str, object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    widths = [max(len(name), *(len(cell(row[name])) for row in rows)) for name in COLUMNS]
    lines = [title, "  ".join(name.rjust(width) for name, width in zip(COLUMNS, widths))]
    lines += ["  ".join(cell(row[name]).rjust(width) for name, width in zip(COLUMNS, widths)) for row in rows]
    return "\n".join(lines)


def evaluate(title: str, pages: list[tuple[str, bytes]], truth: object | None, redis: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="neardup-quality-") as tmp:
        if redis:
            with RedisServer(Path(tmp) / "redis") as server:
                runs = [judge(pages, features, Path(tmp), server.url) for features in FEATURES]
        else:
            runs = [judge(pages, features, Path(tmp)) for features in FEATURES]
    texts = {**runs[0].texts, **runs[1].texts}
    judged = [url for url, _ in pages if url in texts]
    sets = {url: shingle_set(texts[url]) for url in judged}
    pairs = similar_pairs(sets)
    rows = []
    for verdicts in runs:
        rows.append({"features": verdicts.features, **score(verdicts, sets, pairs)})
    out = [table(f"{title}: {len(pages)} pages", rows)]
    if truth is not None:
        out += [f"  {verdicts.features}: {designed_scores(verdicts, truth)}" for verdicts in runs]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    parser.add_argument("--redis", action="store_true",
                        help="the Redis content-seen sets (a redis-server of its own) instead of SQLite's")
    args = parser.parse_args()
    web_pages, truth = test_web_pages()
    reports = [
        evaluate("real documentation pages (Debian doc packages)", list(real_pages()), None, args.redis),
        evaluate("synthetic test web", list(web_pages), truth, args.redis),
    ]
    notes = (f"resemblance: distinct word 3-shingles; recall pairs from {PERMUTATIONS}-permutation MinHash "
             f">= {PREFILTER}, then exact; new: CONTENTSEEN_NEAR_MIN_SHINGLES="
             f"{defaults.CONTENTSEEN_NEAR_MIN_SHINGLES}, CONTENTSEEN_NEAR_MIN_RESEMBLANCE="
             f"{defaults.CONTENTSEEN_NEAR_MIN_RESEMBLANCE}, distance {defaults.CONTENTSEEN_NEAR_DISTANCE}; "
             "ms/page: text + features + index (noisy, shared machine)")
    text = "\n\n".join([*reports, notes]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
