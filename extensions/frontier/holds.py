"""Origins that cannot be crawled now (keyed by origin as robots.txt is, not
by politeness key): their URLs parked until the hold ends, or deferred for
this run (status ``deferred``, retried first on resume). Pure: no clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from extensions.frontier.store import Entry

INFINITY = float("inf")


def origin_of(url: str) -> str:
    """``scheme://netloc`` of ``url``, as robots.txt is keyed."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@lru_cache(maxsize=4096)
def host_of_origin(origin: str) -> str:
    """The politeness key (host name) of an origin ``scheme://netloc``."""
    return (urlsplit(origin).hostname or "").lower()


@dataclass(slots=True)
class Hold:
    """One held origin: until when, why, and the URLs parked meanwhile."""

    until: float
    reason: str
    parked: dict[int, Entry] = field(default_factory=dict)  # by fingerprint: a copy parks once
    wait_out: bool = False  # it ends by itself (a pushback): the idle close waits for it


#: The deferral of a host that yields too little new content (host yield):
#: it stops the host's exploration, not the re-visits of its fetched pages.
LOW_YIELD = "low-yield"
EXPLORATION_ONLY = frozenset({LOW_YIELD})


class OriginHolds:
    """Held origins with their parked URLs, and deferred origins."""

    def __init__(self) -> None:
        self.held: dict[str, Hold] = {}
        self.deferred: dict[str, str] = {}  # origin -> reason

    def __bool__(self) -> bool:
        return bool(self.held or self.deferred)

    def hold(self, origin: str, until: float, reason: str, wait_out: bool | None = None) -> None:
        """No URL of ``origin`` before ``until``; ``wait_out``: the crawl waits for it to end."""
        current = self.held.get(origin)
        if current is None:
            self.held[origin] = Hold(until, reason, wait_out=bool(wait_out))
        else:
            current.until, current.reason = until, reason
            if wait_out is not None:
                current.wait_out = wait_out

    def waiting_out(self) -> bool:
        """Whether a timed hold that the crawl waits out is pending."""
        return any(hold.wait_out and hold.until < INFINITY for hold in self.held.values())

    def state_of(self, url: str, revisit: bool = False) -> str | None:
        """``"held"``, ``"deferred"`` or None for the origin of ``url``."""
        origin = origin_of(url)
        reason = self.deferred.get(origin)
        if reason is not None and not (revisit and reason in EXPLORATION_ONLY):
            return "deferred"
        return "held" if origin in self.held else None

    def park(self, entry: Entry) -> bool:
        """Keep ``entry`` until its origin's hold ends; False if not held."""
        hold = self.held.get(origin_of(entry.url))
        if hold is None:
            return False
        hold.parked.setdefault(entry.fingerprint, entry)
        return True

    def release_due(self, now: float) -> list[Entry]:
        """Holds whose time has come: one parked URL of each as a probe."""
        probes: list[Entry] = []
        for origin in [o for o, hold in self.held.items() if hold.until <= now]:
            hold = self.held[origin]
            if not hold.parked:
                del self.held[origin]
                continue
            probes.append(hold.parked.pop(next(iter(hold.parked))))
            hold.until = INFINITY
        return probes

    def release(self, origin: str) -> list[Entry]:
        """End ``origin``'s hold (its probe went through); return its parked URLs."""
        hold = self.held.pop(origin, None)
        return [] if hold is None else list(hold.parked.values())

    def defer(self, origin: str, reason: str) -> list[Entry]:
        """Defer ``origin`` for the rest of the run; return its parked URLs."""
        self.deferred[origin] = reason
        return self.release(origin)

    def defer_all_held(self, prefix: str) -> dict[str, tuple[str, list[Entry]]]:
        """Defer every held origin: origin -> (reason, its parked URLs)."""
        out = {}
        for origin in list(self.held):
            reason = f"{prefix}: {self.held[origin].reason}"
            out[origin] = (reason, self.defer(origin, reason))
        return out

    def next_release(self) -> float | None:
        """The earliest end of a timed hold, None when there is none."""
        due = min((hold.until for hold in self.held.values()), default=INFINITY)
        return None if due == INFINITY else due

    def parked(self) -> int:
        return sum(len(hold.parked) for hold in self.held.values())
