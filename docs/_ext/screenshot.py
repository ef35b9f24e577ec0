"""The built documentation's start page in headless Chromium (Debian's ``chromium``).

``python docs/_ext/screenshot.py [INDEX_HTML [PNG]]`` (``make docs-screenshot``)
saves ``docs/_static/start.png``, the screenshot the README shows, from
``docs/_build/html/index.html``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testweb.browser import screenshot  # noqa: E402

INDEX = ROOT / "docs" / "_build" / "html" / "index.html"
PNG = ROOT / "docs" / "_static" / "start.png"
WIDTH, HEIGHT = 1200, 900


def take(index: Path = INDEX, png: Path = PNG) -> Path:
    """A ``WIDTH`` x ``HEIGHT`` PNG of the page ``index`` (a file), at ``png``."""
    if not index.is_file():
        raise FileNotFoundError(f"{index}: build the docs first (make docs)")
    png.parent.mkdir(parents=True, exist_ok=True)
    return screenshot(index.resolve().as_uri(), png, width=WIDTH, height=HEIGHT)


if __name__ == "__main__":
    arguments = [Path(argument) for argument in sys.argv[1:3]]
    print(take(*arguments))
