"""Call counts and seconds of chosen functions in saved cProfile files,
side by side: how a change to the per-page path is shown (counts are exact;
seconds are noisy on a shared machine).

    python -m bench.profile_calls before.prof after.prof --match scan_html text.py:.*_parse

``--match``: regular expressions on ``file(function)``; every matching
function is a row: calls, cumulative seconds and their share of the
profile's total (the share is steadier than seconds when the machine's load
changes between runs).
"""

from __future__ import annotations

import argparse
import pstats
import re
from pathlib import Path


def rows(path: Path, patterns: list[re.Pattern[str]]) -> dict[str, tuple[int, float]]:
    """``file(function)`` -> (calls, cumulative seconds) for matching
    functions (a moved function keeps its row); ``total`` -> the profile's."""
    profile = pstats.Stats(str(path))
    stats = profile.stats  # type: ignore[attr-defined]
    found = {"total": (0, profile.total_tt)}  # type: ignore[attr-defined]
    for (filename, line, name), (_, calls, _, cumulative, _) in stats.items():
        key = f"{'/'.join(filename.split('/')[-2:])}({name})"
        if any(pattern.search(key) for pattern in patterns):
            found[key] = (calls, cumulative)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", type=Path)
    parser.add_argument("--match", nargs="+", required=True)
    args = parser.parse_args()
    patterns = [re.compile(text) for text in args.match]
    tables = [rows(path, patterns) for path in args.profiles]
    keys = sorted({key for table in tables for key in table}, key=lambda k: -max(t.get(k, (0, 0))[1] for t in tables))
    header = "".join(f" | {path.stem} calls | {path.stem} s | share" for path in args.profiles)
    print(f"| function{header} |")
    print("|---" + "|---:" * 3 * len(args.profiles) + "|")
    for key in keys:
        cells = "".join(
            f" | {t[key][0]} | {t[key][1]:.2f} | {100 * t[key][1] / t['total'][1]:.1f}%" if key in t
            else " | - | - | -" for t in tables)
        print(f"| {key}{cells} |")


if __name__ == "__main__":
    main()
