"""Headless Chromium (Debian's ``chromium``), to look at a page as a person would.

:func:`screenshot` saves a PNG of a page; :func:`dump_dom` prints the DOM
after the page's scripts ran (a probe page's script can write what it found
into the DOM). Each run gets its own profile directory, so browsers started
by tests running side by side never share one. ``timeout`` is the last resort
against a hung browser, far above what a page needs.

:func:`png_size` reads a PNG's width and height from its header (no imaging
library needed), raising ValueError for anything that is not a PNG.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: --disable-background-networking: no update checks or field trials (loopback only)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking",
         "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio")


class MissingBrowser(RuntimeError):
    """No ``chromium`` on PATH."""


def chromium() -> str:
    """The browser's path; MissingBrowser with the fix when there is none."""
    found = shutil.which("chromium")
    if found is None:
        raise MissingBrowser("chromium is not installed: `make test` installs Debian's package "
                             "(apt-get install chromium)")
    return found


def _run(arguments: list[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium(), *FLAGS, f"--user-data-dir={profile}", *arguments]
        return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False)


def screenshot(url: str, path: Path, width: int = 1280, height: int = 2400,
               timeout: float = 120.0) -> Path:
    """A PNG of ``url`` as rendered in a ``width`` x ``height`` window."""
    path.unlink(missing_ok=True)
    result = _run([f"--window-size={width},{height}", f"--screenshot={path}", url], timeout)
    if not path.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {url} (exit {result.returncode}):\n"
                           f"{result.stderr.decode(errors='replace')[-2000:]}")
    return path


def dump_dom(url: str, budget_ms: int = 10_000, timeout: float = 120.0) -> str:
    """The DOM of ``url`` once loaded and its scripts ran (up to ``budget_ms``
    of the page's virtual time)."""
    result = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url], timeout)
    return result.stdout.decode(errors="replace")


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height
