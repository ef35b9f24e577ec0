"""How many bits a sketch value needs: resemblance estimates and packed sizes per value width.

Pairs of pages whose true resemblance is known:

* *real*: every pair of the Debian documentation pages (as
  :mod:`bench.neardup_quality` reads them) estimated >= 0.3 by MinHash, its
  resemblance then computed exactly;
* *edited*: random pages of 100 to 20,000 words and a copy with 1% to 50% of
  its words replaced.

For each value width (32: the whole values; fewer: the low bits dropped as
:func:`~extensions.contentseen.resemblance.resemblance` drops them), the
estimate's mean error and RMS error against the exact resemblance, the
verdicts at ``CONTENTSEEN_NEAR_MIN_RESEMBLANCE`` that differ from the 32-bit
ones and from the truth, and the mean bytes of a packed sketch
(:func:`~extensions.backends.redis.nearindex.pack_sketch`).

    python -m bench.neardup_sketch_bits --out bench/results/neardup_sketch_bits.txt
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from bench.neardup_quality import real_pages, similar_pairs
from extensions import defaults
from extensions.backends.redis.nearindex import pack_sketch
from extensions.contentseen.resemblance import (
    SKETCH_VALUE_BITS,
    exact_resemblance,
    near_features,
    resemblance,
    sketch_of,
)
from extensions.contentseen.simhash import shingle_set
from extensions.contentseen.text import visible_text

WIDTHS = (32, SKETCH_VALUE_BITS, 14, 12, 10)

Pair = tuple[float, bytes, bytes]  # exact resemblance, the two sketches


def real_pairs() -> tuple[list[Pair], list[bytes]]:
    """Similar pairs of the documentation pages, and every page's sketch."""
    texts = {url: visible_text(body[:defaults.CONTENTSEEN_MAX_TEXT_BYTES], "utf-8") for url, body in real_pages()}
    sets = {url: shingle_set(text) for url, text in texts.items() if text}
    sketches = {url: near_features(texts[url]).sketch for url in sets}
    pairs = [(truth, sketches[first], sketches[second])
             for (first, second), truth in similar_pairs(sets).items()]
    return pairs, list(sketches.values())


def edited_pairs(count: int, seed: int = 1) -> list[Pair]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [f"w{rng.randrange(10**7)}" for _ in range(rng.choice((100, 400, 2000, 20000)))]
        copy = list(words)
        for position in rng.sample(range(len(words)), int(len(words) * rng.uniform(0.01, 0.5))):
            copy[position] = f"x{rng.randrange(10**9)}"
        first, second = shingle_set(" ".join(words)), shingle_set(" ".join(copy))
        pairs.append((exact_resemblance(first, second), sketch_of(first), sketch_of(second)))
    return pairs


def rows(title: str, pairs: list[Pair], sketches: list[bytes]) -> list[str]:
    threshold = defaults.CONTENTSEEN_NEAR_MIN_RESEMBLANCE
    truth = np.array([pair[0] for pair in pairs])
    whole = np.array([resemblance(first, second, bits=32) for _, first, second in pairs])
    out = [(f"{title}: {len(pairs)} pairs, {int(np.count_nonzero(truth >= threshold))} at resemblance >= "
            f"{threshold}; sketch bytes over {len(sketches)} sketches"),
           "bits  mean error  RMS error  verdicts != 32-bit  verdicts != truth  bytes/sketch"]
    for bits in WIDTHS:
        estimates = np.array([resemblance(first, second, bits=bits) for _, first, second in pairs])
        errors = estimates - truth
        size = np.mean([len(pack_sketch(sketch, bits)) for sketch in sketches])
        out.append(f"{bits:>4}  {errors.mean():+10.4f}  {np.sqrt((errors ** 2).mean()):9.4f}  "
                   f"{int(np.count_nonzero((estimates >= threshold) != (whole >= threshold))):>18}  "
                   f"{int(np.count_nonzero((estimates >= threshold) != (truth >= threshold))):>17}  {size:12.1f}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--edited", type=int, default=400, help="edited page pairs")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)
    real, sketches = real_pairs()
    edited = edited_pairs(args.edited)
    text = "\n".join([
        *rows("real documentation pages (Debian doc packages)", real, sketches), "",
        *rows("edited random pages (100 to 20,000 words, 1-50% of words replaced)", edited,
              [sketch for _, first, second in edited for sketch in (first, second)]), "",
        (f"bits: significant bits of the larger sketch's largest value kept in a comparison (this release: "
         f"{SKETCH_VALUE_BITS}); errors: estimate minus the exact resemblance of the two shingle sets; "
         "bytes/sketch: pack_sketch (16-bit values and less: the Redis layout; 32: the same code on whole values)"),
    ]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
