"""Running a reactor probe: a test module (``tests/*_probe.py``) run as a
subprocess, because a Twisted reactor runs once per process. The probe
prints its result as JSON on its last line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAUSE_MS = 1500  # how long a probe pauses redis-server: about 150 ticks of 10 ms


def run_probe(module: str, *args: str, timeout: float = 180) -> dict[str, Any]:
    """The JSON result of ``python -m tests.<module> ARGS`` (which must exit 0)."""
    done = subprocess.run([sys.executable, "-m", f"tests.{module}", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
