"""Links the spider yielded recently: a cheap URL-seen cache before the
frontier's exact test. A link is held back only if it was passed on at the
same or a smaller depth."""

from __future__ import annotations

from collections import OrderedDict


class RecentLinks:
    """Bounded LRU of canonical URL -> the least depth it was passed on at."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"LINKS_RECENT_CACHE_SIZE must be >= 0, got {size!r}")
        self.size = size
        self.depths: OrderedDict[str, int] = OrderedDict()

    def fresh(self, url: str, depth: int) -> bool:
        """True if ``url`` at ``depth`` must be passed on (and remember it)."""
        if not self.size:
            return True
        depths = self.depths
        known = depths.get(url)
        if known is not None:
            depths.move_to_end(url)
            if known <= depth:
                return False
        depths[url] = depth
        if len(depths) > self.size:
            depths.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self.depths)
