"""Links the spider yielded recently: a cheap URL-seen cache before the
frontier's exact test. A link is held back only if it was passed on at the
same or a smaller depth."""

from __future__ import annotations

from scrapy.utils.datatypes import LocalCache


class RecentLinks(LocalCache[str, int]):
    """Bounded LRU of canonical URL -> the least depth it was passed on at."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"LINKS_RECENT_CACHE_SIZE must be >= 0, got {size!r}")
        super().__init__(size)

    def fresh(self, url: str, depth: int) -> bool:
        """True if ``url`` at ``depth`` must be passed on (and remember it)."""
        known = self.get(url)
        if known is not None:
            self.move_to_end(url)
            if known <= depth:
                return False
        self[url] = depth
        return True
