"""The re-visit history of one URL, as every store keeps it.

Declared here for the policy; the store's module (``extensions/store/base.py``)
is its home once both are merged, and this module then re-exports it.
"""

from __future__ import annotations

from typing import NamedTuple


class RevisitRecord(NamedTuple):
    """What the URL database remembers about a fetched URL's changes.

    Times are wall-clock seconds (``time.time()``); ``due`` is ``math.inf``
    when the URL is not scheduled (taken by a process, or gone)."""

    fingerprint: int            # the URL's (URL database key)
    due: float                  # wall-clock time it is next due; math.inf: not scheduled (taken, or gone)
    interval: float             # the current re-visit interval, seconds
    visits: int = 0             # fetches answered (200, 304, 404/410)
    changes: int = 0            # visits that found the page changed (the first fetch is not a change)
    first_visit: float = 0.0    # wall time of the first fetch
    last_visit: float = 0.0     # wall time of the latest fetch
    last_change: float = 0.0    # wall time the latest change was seen (first fetch: its time)
    content: int | None = None  # exact content fingerprint of the latest 200 (signed 64-bit)
    etag: str | None = None     # validators of the latest 200
    last_modified: str | None = None
    gone: int = 0               # consecutive 404/410 answers after a 200 (0: alive)
