"""Cost per page of the content-seen tests (issue 5), in microseconds.

Steps, each timed on its own over the same pages, median of ``--runs``:

* *visible text*: lxml parse, scripts and styles dropped, whitespace normalised;
* *fingerprint raw* / *fingerprint text*: MurmurHash3 of the body bytes / of
  the visible text;
* *simhash*: the near-duplicate features of the visible text, numpy: the
  distinct 3-word shingles, their simhash (digits folded) and resemblance
  sketch (issue 12; before it, the simhash of the shingles with multiplicity);
* *exact set, new* / *exact set, old*: ``ContentSeen.add_or_get`` with
  ``--stored`` fingerprints on disk: a fingerprint never seen (memory miss,
  B-tree miss, insert; commits amortised) and one seen long ago (evicted from
  the LRU: a disk hit);
* *near index, new*: ``NearDuplicateIndex.add_or_match`` of a random simhash
  with ``--stored`` documents (a look-up, then stored: the flushes, with
  their level moves, are included, at least two per run);
* *near index, match*: ``NearDuplicateIndex.match`` of a stored simhash with
  2 bits flipped (found).

Pages: real test-web HTML (regular pages, ~80 words), ``10 kB`` pages (the
visible text of ~12 test-web pages in one document, ~1000 words: a typical
article) and ``100 kB`` pages (the same, ~12 000 words). The stores are
filled with a bulk insert of the rows the index would write (so that a
million entries take seconds, not minutes); only the timed calls use the
public API. Candidates per look-up are the index's own counters.

    python -m bench.contentseen_cost                      # 1e6 stored, layout b=5
    python -m bench.contentseen_cost --layouts 4,5,6      # the layout trade-off
    python -m bench.contentseen_cost --stored 1e5 --runs 3   # quick
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from testweb.model import SiteModel, WebConfig, host_name
from testweb.neardup_truth import expected_candidates
from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import NearDuplicateIndex
from extensions.contentseen.text import visible_text
from extensions.contentseen.fingerprint import bytes_fingerprint, text_fingerprint, to_signed64
from extensions.contentseen.nearindex import MIN_KEY, TABLE_SHIFT, BlockLayout
from extensions.contentseen.resemblance import SKETCH_SIZE, near_features

PAGE_KINDS = ("test web", "10 kB", "100 kB")
SKETCH = bytes(range(256))[:4 * SKETCH_SIZE]  # a full-size resemblance sketch, as a long page has


def test_web_pages(count: int) -> list[bytes]:
    model = SiteModel(WebConfig(hosts=100, pages=100), 8000)
    rng = random.Random(1)
    return [model.page(host_name(rng.randrange(100)), f"/p/{rng.randrange(100)}.html").body
            for _ in range(count)]


def combined_pages(sources: list[bytes], size: int, count: int) -> list[bytes]:
    """Pages of about ``size`` bytes: test-web pages' bodies inside one document."""
    pages, position = [], 0
    for _ in range(count):
        parts, length = [], 0
        while length < size:
            body = sources[position % len(sources)]
            position += 1
            inner = body.split(b"<body>", 1)[-1].rsplit(b"</body>", 1)[0]
            parts.append(b"<div class=\"story\">" + inner + b"</div>\n")
            length += len(parts[-1])
        head = b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>combined</title>'
        script = b"<script>var analytics = {id: 42, events: []};</script></head><body>\n"
        pages.append(head + script + b"".join(parts) + b"</body></html>\n")
    return pages


def per_call(function: Callable[[object], object], inputs: Sequence[object], runs: int) -> float:
    """Median over ``runs`` of the mean time of one call, in microseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for item in inputs:
            function(item)
        times.append((time.perf_counter() - start) / len(inputs) * 1e6)
    return statistics.median(times)


def page_steps(pages: list[bytes], runs: int) -> dict[str, float]:
    texts = [visible_text(body, "utf-8") for body in pages]
    return {
        "visible text": per_call(lambda body: visible_text(body, "utf-8"), pages, runs),
        "fingerprint raw": per_call(bytes_fingerprint, pages, runs),
        "fingerprint text": per_call(text_fingerprint, texts, runs),
        "simhash": per_call(near_features, texts, runs),
        "words": statistics.mean(len(text.split()) for text in texts),
        "bytes": statistics.mean(map(len, pages)),
    }


def fill_exact(path: Path, stored: int, rng: np.random.Generator) -> np.ndarray:
    values = rng.integers(0, 2**64 - 1, stored, dtype=np.uint64, endpoint=True)
    with ContentSeen.open(path) as seen:
        seen.connection.execute("BEGIN")
        seen.connection.executemany(
            "INSERT OR IGNORE INTO content_seen VALUES (?, ?)",
            ((to_signed64(value), f"http://h{value % 5000}.test/p/{value}.html") for value in values.tolist()))
        seen.connection.execute("COMMIT")
    return values


def exact_costs(path: Path, stored: np.ndarray, runs: int, ops: int) -> dict[str, float]:
    rng = random.Random(2)
    results: dict[str, list[float]] = {"exact set, new": [], "exact set, old": []}
    with ContentSeen.open(path, memory_entries=65536, batch_size=1024) as seen:
        ops = max(ops, 2 * seen.batch_size)  # every run pays its share of flushes
        for _ in range(runs):
            fresh = [rng.getrandbits(64) for _ in range(ops)]
            old = [int(value) for value in stored[np.random.default_rng(rng.getrandbits(32)).integers(0, len(stored), ops)]]
            results["exact set, new"].append(per_call(lambda value: seen.add_or_get(value, "u"), fresh, 1))
            results["exact set, old"].append(per_call(lambda value: seen.add_or_get(value, "u"), old, 1))
        stats = seen.stats()
    if len(stored) >= 50 * runs * ops:  # then repeats are rare: the old ones really came from disk
        assert stats["disk_hits"] >= runs * ops * 0.9, stats
    return {name: statistics.median(values) for name, values in results.items()}


def layout_keys(layout: BlockLayout, values: np.ndarray) -> list[np.ndarray]:
    """``layout.keys`` for many values at once."""
    blocks = [(values >> np.uint64(start)) & np.uint64((1 << width) - 1) for start, width in layout.block_bits]
    keys = []
    for number, table in enumerate(layout.tables):
        key = np.zeros(len(values), dtype=np.uint64)
        for block in table:
            key = (key << np.uint64(layout.block_bits[block][1])) | blocks[block]
        keys.append((key | np.uint64(number << TABLE_SHIFT)).astype(np.int64))
    return keys


def fill_near(path: Path, blocks: int, stored: int, rng: np.random.Generator) -> np.ndarray:
    """An index of ``stored`` random documents in steady state: every level
    below the top one full, as after a long crawl."""
    values = rng.integers(0, 2**64 - 1, stored, dtype=np.uint64, endpoint=True)
    ids = np.arange(1, stored + 1, dtype=np.int64)
    with NearDuplicateIndex.open(path, blocks=blocks) as index:
        rows = np.concatenate([np.stack([keys, ids], axis=1) for keys in layout_keys(index.layout, values)])
        rows = rows[rng.permutation(len(rows))]
        connection, levels = index.connection, index.levels
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO near_docs VALUES (?, ?, ?, ?, ?)", (
            (doc_id, to_signed64(value), doc_id, f"http://h{doc_id % 5000}.test/p/{doc_id}.html", SKETCH)
            for doc_id, value in zip(ids.tolist(), values.tolist())))
        start, level, levels.sizes = 0, 0, []
        while start < len(rows):
            part = rows[start:start + levels.capacity(level)]
            part = part[np.lexsort((part[:, 1], part[:, 0]))]
            connection.executemany(f"INSERT INTO near_keys VALUES ({level}, ?, ?)", part.tolist())
            levels.sizes.append(len(part))
            start, level = start + len(part), level + 1
        levels.cursors = [MIN_KEY] * len(levels.sizes)
        connection.execute("INSERT OR REPLACE INTO near_meta VALUES ('levels', ?)", (levels.meta(),))
        connection.execute("INSERT OR REPLACE INTO near_meta VALUES ('reserved_id', ?)", (str(stored + 1),))
        connection.execute("COMMIT")
        index.next_id = stored + 1
    return values


def near_costs(path: Path, blocks: int, stored: np.ndarray, runs: int, ops: int) -> dict[str, float]:
    rng = random.Random(3)
    results: dict[str, list[float]] = {"near index, new": [], "near index, match": []}
    with NearDuplicateIndex.open(path, blocks=blocks) as index:
        ops = max(ops, 2 * index.buffer_entries)  # every run pays its share of flushes
        candidates = 0
        for _ in range(runs):
            fresh = [rng.getrandbits(64) for _ in range(ops)]
            before = index.stats()["candidates"]
            results["near index, new"].append(
                per_call(lambda value: index.add_or_match(value, "u", SKETCH), fresh, 1))
            candidates += index.stats()["candidates"] - before
            near = [int(stored[rng.randrange(len(stored))]) ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64))
                    for _ in range(ops // 4)]
            found = [0]

            def lookup(value: int) -> None:
                found[0] += index.match(value, SKETCH) is not None

            results["near index, match"].append(per_call(lookup, near, 1))
            assert found[0] == len(near), found  # every near query matched
        layout, stats = index.layout, index.stats()
    costs = {name: statistics.median(values) for name, values in results.items()}
    costs["candidates"] = candidates / (runs * ops)
    costs["expected"] = expected_candidates(layout, len(stored))
    costs["tables"] = len(layout.tables)
    costs["bytes/doc"] = os.path.getsize(path) / len(stored)
    costs["levels"] = stats["levels"]
    costs["max flush ms"] = stats["max_flush_ms"]
    return costs


def print_table(page_rows: dict[str, dict[str, float]], exact: dict[str, float],
                near: dict[int, dict[str, float]], stored: int, chosen: int) -> None:
    kinds = list(page_rows)
    print(f"\nper-page cost, µs (median of runs); stores hold {stored:,} entries\n")
    print(f"{'step':<26}" + "".join(f"{kind:>12}" for kind in kinds))
    print(f"{'  (bytes / words)':<26}" + "".join(
        f"{int(page_rows[k]['bytes']):>7}/{int(page_rows[k]['words']):<4}" for k in kinds))
    for step in ("visible text", "fingerprint raw", "fingerprint text", "simhash"):
        print(f"{step:<26}" + "".join(f"{page_rows[k][step]:>12.1f}" for k in kinds))
    for step, value in exact.items():
        print(f"{step:<26}{value:>12.1f}   (any page)")
    for step in ("near index, new", "near index, match"):
        print(f"{step + f' (b={chosen})':<26}{near[chosen][step]:>12.1f}   (any page)")
    totals = [page_rows[k]["visible text"] + page_rows[k]["fingerprint raw"] + page_rows[k]["simhash"]
              + exact["exact set, new"] + near[chosen]["near index, new"] for k in kinds]
    print(f"{'total, new page':<26}" + "".join(f"{total:>12.1f}" for total in totals))
    simhash_and_lookup = [page_rows[k]["simhash"] + near[chosen]["near index, new"] for k in kinds]
    print(f"{'simhash + near index':<26}" + "".join(f"{value:>12.1f}" for value in simhash_and_lookup))
    print(f"\nnear-duplicate index layouts at {stored:,} documents (k=3)\n")
    print(f"{'blocks':>6} {'tables':>6} {'cand./lookup':>13} {'expected':>9} {'new µs':>8} "
          f"{'match µs':>8} {'file B/doc':>10} {'levels':>6} {'max flush ms':>12}")
    for blocks, row in sorted(near.items()):
        print(f"{blocks:>6} {int(row['tables']):>6} {row['candidates']:>13.3f} {row['expected']:>9.3f} "
              f"{row['near index, new']:>8.1f} {row['near index, match']:>8.1f} {row['bytes/doc']:>10.0f} "
              f"{int(row['levels']):>6} {int(row['max flush ms']):>12}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stored", type=float, default=1e6, help="entries in each store (default 1e6)")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement; the median is shown")
    parser.add_argument("--pages", type=int, default=200, help="test-web pages per run")
    parser.add_argument("--ops", type=int, default=2000, help="store operations per run")
    parser.add_argument("--layouts", default="5", help="index block counts to measure, e.g. 4,5,6")
    parser.add_argument("--directory", type=Path, default=None, help="where the stores go (a temp dir)")
    args = parser.parse_args(argv)
    stored, layouts = int(args.stored), [int(value) for value in args.layouts.split(",")]
    chosen = 5 if 5 in layouts else layouts[0]
    sources = test_web_pages(max(args.pages, 200))
    pages = {"test web": sources[:args.pages], "10 kB": combined_pages(sources, 10_000, 40),
             "100 kB": combined_pages(sources, 100_000, 8)}
    page_rows = {kind: page_steps(pages[kind], args.runs) for kind in PAGE_KINDS}
    directory = Path(tempfile.mkdtemp(prefix="contentseen-", dir=args.directory))
    try:
        rng = np.random.default_rng(7)
        started = time.perf_counter()
        values = fill_exact(directory / "exact.sqlite3", stored, rng)
        exact = exact_costs(directory / "exact.sqlite3", values, args.runs, args.ops)
        near = {}
        for blocks in layouts:
            path = directory / f"near-{blocks}.sqlite3"
            values = fill_near(path, blocks, stored, rng)
            near[blocks] = near_costs(path, blocks, values, args.runs, args.ops)
            path.unlink()
        print(f"(stores filled and measured in {time.perf_counter() - started:.0f} s)")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print_table(page_rows, exact, near, stored, chosen)


if __name__ == "__main__":
    main()
