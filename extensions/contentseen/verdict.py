"""The content-seen test's answer on one page, whichever store gave it
(SQLite in this process, or Redis, waited for or through a worker)."""

from __future__ import annotations

from typing import NamedTuple


class Verdict(NamedTuple):
    """The content-seen test's answer on one page."""

    duplicate_of: str | None  # the first URL with the page's fingerprint, None if the page is it
    content_group: int | None  # the page's similar-content group; None when not judged
    near_duplicate_of: str | None  # the matched document's URL (may be the page's own)
