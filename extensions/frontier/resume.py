"""Resume after a pause or a crash: rebuild the queues, keep the Bloom filter.

The invariants the frontier's durability rests on:

* The URL table is authoritative: a queued or in-flight row holds all that
  is needed to rebuild its request; the queue tables only give order.
* All changes go into one store transaction, committed (with
  ``FRONTIER_WRITE_AHEAD``) at the end of every scheduler call that changed
  something, before the request it returns reaches the engine, else at each
  checkpoint (``FRONTIER_CHECKPOINT_INTERVAL``). A crash returns the store to
  the last commit: URL rows, statuses, cash (with AOPIC's Lambda and
  dividend) and queue tables agree. A request is never handed out before its
  in-flight status is committed.
* After a crash the queue tables miss the memory buffers, but their URL rows
  are there: :func:`rebuild_queues` refills the front queues from every
  queued or in-flight row, in discovery order, at its stored level;
  in-flight rows become queued (with write-ahead, exactly they are fetched
  again; without, every page finished since the last checkpoint).
* A clean close spills the buffers back (head to the front of its queue,
  tail to the back), requeues what is in flight, records the queue counts
  and sets the store's ``clean`` flag; the next open only rebuilds the host
  table (:meth:`BackQueues.restore`), or rebuilds as after a crash if the
  queue counts changed.
* A URL becomes done only after the engine has finished with its response,
  so a page committed as done has its outlinks committed too.
* WAL with ``synchronous=NORMAL``: an operating-system crash may roll back
  the commits since the last WAL checkpoint (never a torn file).
* The Bloom filter (``FRONTIER_SEEN_BACKEND = "bloom"``) is written after
  each commit with a tag the commit stored in the store's meta; a filter
  whose tag differs, or a missing one, is rebuilt from the URL table. It is
  only a pre-filter: a URL it lacks costs one table look-up, never a refetch.
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
