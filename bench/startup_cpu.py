"""Start-up CPU of ``scrapy`` commands in one or more checkouts.

Every ``scrapy`` command imports every command module, and a crawl loads
every component the add-on lists: what they import at module level is
CPU each crawl pays once. This runs, in each checkout (its own directory
as the project), ``scrapy list`` and a crawl of one unreachable seed (the
whole start and stop, no pages), RUNS times each, and prints the median
CPU (user + sys of the child, from wait4) and which heavy packages each
imports (``python -X importtime``, the first crawl only).

    .venv/bin/python -m bench.startup_cpu [--runs 7] [CHECKOUT ...]

With no CHECKOUT, this one. To compare with an older commit:
``git archive COMMIT | tar -x -C /tmp/old`` and name both. Bytecode is
compiled first (bench.crawl_vs_scrapy.compile_bytecode), as a deployed
crawler has it. The machine may be shared: figures are noisy; compare
medians of the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.crawl_vs_scrapy import compile_bytecode
from testweb.crawlrun import ROOT, SCRAPY

HEAVY = ("redis", "prometheus_client", "matplotlib", "numpy")
COMMANDS = {
    "scrapy list": ["list"],
    "crawl, 1 unreachable seed": ["crawl", "web", "-a", "seeds=http://127.0.0.1:9/",
                                  "-s", "LOG_LEVEL=WARNING", "-s", "ALLOW_PRIVATE_ADDRESSES=True",
                                  "-s", "ROBOTSTXT_RETRY_DELAY=0", "-s", "RETRY_ENABLED=False"],
}


def cpu_seconds(checkout: Path, args: list[str], env: dict[str, str]) -> float:
    """User + sys CPU of one ``scrapy ARGS`` run in ``checkout``."""
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen([SCRAPY, *args], cwd=checkout, env=env, stdout=devnull, stderr=devnull)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def heavy_imports(checkout: Path, args: list[str], env: dict[str, str]) -> list[str]:
    """The HEAVY packages one run imports (from ``-X importtime``)."""
    run = subprocess.run([SCRAPY, *args], cwd=checkout, env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                         capture_output=True, text=True, timeout=300)
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "import time:" in line}
    return [name for name in HEAVY if name in imported]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("checkouts", nargs="*", type=Path, default=[ROOT])
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-cpu-") as home:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "SCRAPY_PROJECT": "default"}
        env.pop("SCRAPY_SETTINGS_MODULE", None)
        env["HOME"] = home  # no user scrapy.cfg
        rows = []
        for checkout in options.checkouts:
            compile_bytecode(checkout)
            for name, args in COMMANDS.items():
                samples = [cpu_seconds(checkout, args, env) for _ in range(options.runs)]
                rows.append((str(checkout), name, statistics.median(samples), min(samples),
                             ", ".join(heavy_imports(checkout, args, env)) or "-"))
    print(f"{'checkout':<28} {'command':<26} {'median CPU s':>12} {'min CPU s':>10}  heavy imports")
    for checkout, name, median, low, heavy in rows:
        print(f"{checkout:<28} {name:<26} {median:>12.3f} {low:>10.3f}  {heavy}")
    print(f"({options.runs} runs each; user+sys of the child; shared machine, noisy)")


if __name__ == "__main__":
    main()
