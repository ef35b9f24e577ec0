"""The conformance vectors kept in ``tests/data/conformance`` (sources and
licences in its ``SOURCE.md``). Tests read them from there only; a missing
or unreadable file fails the test, naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data" / "conformance"


def vectors(name: str) -> Any:
    """The parsed JSON of ``tests/data/conformance/<name>``."""
    path = DATA / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pytest.fail(f"conformance vectors missing: {path} (see {DATA / 'SOURCE.md'})", pytrace=False)
