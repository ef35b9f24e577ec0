"""The content-seen test's answer on one page, whichever store gave it."""

from __future__ import annotations

from typing import NamedTuple


class Verdict(NamedTuple):
    duplicate_of: str | None  # the first URL with the page's fingerprint, None if the page is it
    content_group: int | None  # the page's similar-content group; None when not judged
    near_duplicate_of: str | None  # the matched document's URL (may be the page's own)
