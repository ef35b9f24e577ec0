"""Per-page cost of near-duplicate detection's steps, in microseconds, on
the test web's page texts (issue 17): this checkout and, with
``--checkout NAME=PATH``, others, each in a subprocess of its own.

Steps (the minimum over ``--runs`` passes over all pages; the machine is
shared, so take the figures as noisy):

* ``near_features``: simhash, sketch and shingle count of a visible text,
  and its parts ``shingle_sets`` (``_short_shingle_sets``: a page's text is
  under ``SHORT_TEXT_BYTES``), ``simhash_of``, ``sketch_of``;
* ``exact add_or_get``: a new crawl's exact content-seen set, every page's
  fingerprint new, flushed every 1500 pages (the flushes included);
* ``near add_or_match``: a new crawl's near-duplicate index fed the pages'
  features in a shuffled order, flushed every 1500 pages (flushes timed on
  their own), with the index's statement count; the verdicts' digest must be
  the same for every checkout.

    python -m bench.neardup_micro --checkout before=/path/to/clone-of-main
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def best_per_call(function, arguments: list[tuple], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for argument in arguments:
            function(*argument)
        best = min(best, (time.perf_counter() - started) / len(arguments))
    return best * 1e6


def measure(hosts: int, pages: int, runs: int) -> dict[str, object]:
    """The figures of the checkout this process imports from."""
    import numpy as np

    from testweb.model import SiteModel, WebConfig
    from testweb.truth import fetched_html_pages

    from extensions.contentseen import simhash as shingling
    from extensions.contentseen.exact import ContentSeen
    from extensions.contentseen.fingerprint import text_fingerprint
    from extensions.contentseen.nearindex import NearDuplicateIndex
    from extensions.contentseen.resemblance import near_features, sketch_of
    from extensions.contentseen.text import visible_text
    pages_found = fetched_html_pages(SiteModel(WebConfig(hosts=hosts, pages=pages), port=8080))
    texts = [text for text in (visible_text(body, encoding) for _, body, encoding in pages_found) if text]
    figures: dict[str, object] = {"pages": len(texts)}
    with np.errstate(over="ignore"):
        figures["near_features"] = best_per_call(near_features, [(text,) for text in texts], runs)
        figures["shingle_sets"] = best_per_call(shingling.shingle_sets, [(text,) for text in texts], runs)
        sets = [shingling.shingle_sets(text) for text in texts]
        figures["simhash_of"] = best_per_call(shingling.simhash_of, [(folded,) for _, folded in sets], runs)
        figures["sketch_of"] = best_per_call(sketch_of, [(plain,) for plain, _ in sets], runs)
    urls = [f"http://h{number % hosts}.test/p{number}" for number in range(len(texts))]
    fingerprints = [text_fingerprint(text) for text in texts]
    features = [near_features(text) for text in texts]
    order = list(range(len(texts)))
    random.Random(1).shuffle(order)
    exact_best = add_best = flush_best = float("inf")
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            with ContentSeen.open(Path(directory) / "seen.sqlite3", cache_kib=2048) as seen:
                started = time.perf_counter()
                for number in order:
                    seen.add_or_get(fingerprints[number], urls[number])
                    if number % 1500 == 1499:
                        seen.flush()
                exact_best = min(exact_best, time.perf_counter() - started)
            index = NearDuplicateIndex.open(Path(directory) / "near.sqlite3", cache_kib=2048)
            verdicts, adding, flushing = [], 0.0, 0.0
            for step, number in enumerate(order):
                started = time.perf_counter()
                verdicts.append(index.add_or_match(features[number].simhash, urls[number], features[number].sketch))
                adding += time.perf_counter() - started
                if step % 1500 == 1499:
                    started = time.perf_counter()
                    index.flush()
                    flushing += time.perf_counter() - started
            stats = index.stats()
            index.close()
            add_best, flush_best = min(add_best, adding), min(flush_best, flushing)
    figures["exact add_or_get"] = exact_best / len(texts) * 1e6
    figures["near add_or_match"] = add_best / len(texts) * 1e6
    figures["near flush (per page)"] = flush_best / len(texts) * 1e6
    figures["near statements"] = stats.get("disk_queries", stats["lookups"] - stats["identical"])
    figures["verdicts digest"] = hashlib.sha1(repr(verdicts).encode()).hexdigest()[:12]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        print(json.dumps(measure(options.hosts, options.pages, options.runs)))
        return
    checkouts = [("this", ROOT)] + [(name, Path(path)) for name, _, path in
                                    (item.partition("=") for item in options.checkout)]
    results = {}
    for name, path in checkouts:
        output = subprocess.run(
            [sys.executable, "-m", "bench.neardup_micro", "--measure", "--hosts", str(options.hosts),
             "--pages", str(options.pages), "--runs", str(options.runs)],
            cwd=path, check=True, capture_output=True, text=True).stdout
        results[name] = json.loads(output.strip().splitlines()[-1])
    names = [name for name, _ in checkouts]
    print(f"near-duplicate steps per page, us (min of {options.runs} runs; shared machine: noisy); "
          f"test web {options.hosts} hosts x {options.pages} pages, {results['this']['pages']} texts")
    print(f"{'step':24s}" + "".join(f"{name:>14s}" for name in names))
    for step in results["this"]:
        if step == "pages":
            continue
        cells = [results[name].get(step, "-") for name in names]
        print(f"{step:24s}" + "".join(f"{cell:>14.1f}" if isinstance(cell, float) else f"{cell!s:>14s}"
                                      for cell in cells))


if __name__ == "__main__":
    main()
