"""Resume after a pause or a crash: rebuild the queues, keep the Bloom filter.

Invariants the frontier's durability rests on:

* The URL table is authoritative: a queued or in-flight row holds all that
is needed to rebuild its request; the queue tables only give order.
* All changes go into one store transaction, committed before a request is
handed out (``FRONTIER_WRITE_AHEAD``) or at each checkpoint; a crash
returns to the last commit, where rows, cash and queues agree.
* After a crash :func:`rebuild_queues` refills the front queues from every
queued or in-flight row, in discovery order, at its stored level.
* A clean close spills the buffers, requeues what is in flight, records
the queue counts and sets ``clean``; the next open only restores the back
queues, or rebuilds if the queue counts changed.
* A URL is done only after the engine has finished with its response, so a
page committed as done has its outlinks committed too.
* The Bloom filter is written after each commit with a tag stored in the
store's meta; a filter with another tag, or none, is rebuilt from the URL
table (it is only a pre-filter).
"""

from __future__ import annotations

import logging
from pathlib import Path

from extensions.frontier.back import BackQueues
from extensions.frontier.front import FrontQueues
from extensions.frontier.urlseen import BloomSeen
from extensions.frontier.store import FrontierStore

logger = logging.getLogger(__name__)

_BATCH = 10_000


def shape_changed(store: FrontierStore, front: FrontQueues, back: BackQueues) -> bool:
    """Whether the store was written with other queue counts."""
    stored = (store.get_meta("front_queues"), store.get_meta("back_queues"))
    if stored == (None, None):
        return False
    return stored != (str(len(front.queues)), str(len(back.queues)))


def record_shape(store: FrontierStore, front: FrontQueues, back: BackQueues) -> None:
    store.set_meta("front_queues", str(len(front.queues)))
    store.set_meta("back_queues", str(len(back.queues)))


def rebuild_queues(store: FrontierStore, front: FrontQueues, back: BackQueues) -> int:
    """Refill the front queues from the URL table; return how many URLs."""
    store.queues.clear()
    top = len(front.queues) - 1
    batches: dict[int, list[int]] = {}
    total = 0
    for fp, level in store.urls.iter_pending(_BATCH):
        level = min(top, max(0, level))
        batch = batches.setdefault(level, [])
        batch.append(fp)
        total += 1
        if len(batch) >= _BATCH:
            store.queues.push(f"front/{level}", batch)
            batches[level] = []
    for level, batch in batches.items():
        store.queues.push(f"front/{level}", batch)
    store.urls.requeue_inflight()
    for queue in front.queues:
        queue.drop_buffers()
    back.drop_buffers()
    record_shape(store, front, back)
    store.checkpoint()
    return total


def save_bloom(store: FrontierStore, bloom: BloomSeen | None, path: Path | None, tag: str) -> None:
    """Commit the store with ``tag`` in its meta, then write the filter."""
    write = bloom is not None and path is not None and (bloom.dirty or not path.exists())
    if write:
        store.set_meta("bloom_tag", tag)
    store.checkpoint()
    if write:
        bloom.save(path, tag)  # type: ignore[union-attr]


def load_bloom(store: FrontierStore, bloom: BloomSeen | None, path: Path | None) -> None:
    """Load the filter if it matches the store, else rebuild it."""
    if bloom is None or path is None:
        return
    tag = store.get_meta("bloom_tag")
    if tag and bloom.load(path, tag):
        return
    count = bloom.rebuild(fp for fp, _ in store.urls.iter_all(_BATCH))
    if count:
        logger.info("Rebuilt the URL-seen Bloom filter from %d URL rows", count)
