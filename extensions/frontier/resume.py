"""Resume after a pause or a crash: rebuild the queues, keep the Bloom filter.

How the frontier survives (the design, in one place):

* The URL table is authoritative. A queued or in-flight row holds all that
  is needed to rebuild its request; the queue tables only give order.
* All changes go into one store transaction. With write-ahead
  (``FRONTIER_WRITE_AHEAD``, the default on the SQLite store) it is committed
  at the end of every scheduler call that changed something, before the
  request it returns reaches the engine (Mercator: the frontier's state is
  durable); otherwise only at each checkpoint
  (``FRONTIER_CHECKPOINT_INTERVAL``). A crash returns the store to exactly
  the last commit: URL rows, statuses, cash and queue tables agree.
* Memory buffers are not in the queue tables between checkpoints (a head
  buffer was popped from them, a tail buffer not yet pushed), so after a
  crash the queue tables alone would miss them -- but their URL rows are
  there (status queued). Hence :func:`rebuild_queues`: empty the queue
  tables and refill the front queues from every queued or in-flight row, in
  discovery order, each at its stored level; in-flight rows become queued.
* A clean close (finished, or Ctrl-C's 'shutdown') spills the buffers back
  (head buffer to the front of its queue, tail to the back), requeues
  anything still in flight, records the queue counts and sets the store's
  ``clean`` flag. The next open then only rebuilds the host table from the
  head of each back queue (:meth:`BackQueues.restore`); if the queue counts
  changed, it rebuilds as after a crash.
* A URL becomes done only after the engine has finished with its response,
  i.e. after the outlinks its callbacks yielded were enqueued. So a page
  committed as done has its outlinks committed too (same or earlier
  transaction): no discovered URL is lost.
* What a kill costs. With write-ahead, the URLs fetched again after
  ``kill -9`` and the same command are exactly the rows in flight in the
  file at the kill: requests handed to the engine and not finished (and
  pages finished since the last scheduler call, whose done status was not
  committed yet). A request is never handed out before its in-flight status
  is committed, so no fetched URL is still "queued" in the file. AOPIC's
  Lambda and dividend are written into each commit with the cash rows, so
  cash stays conserved. Without write-ahead, every page finished since the
  last checkpoint is fetched again.
* Beyond a process kill: WAL with ``synchronous=NORMAL`` does not fsync at
  commit, so an operating-system crash or power loss may roll back the
  commits since the last WAL checkpoint (never a torn file); those pages
  are fetched again.
* The Bloom filter (``FRONTIER_SEEN_BACKEND = "bloom"``) is written after
  each commit with a tag that the commit also stored in the store's meta;
  on open, a filter whose tag differs (a crash between the two writes, or a
  missing file) is rebuilt from the URL table's fingerprints. After a kill
  the filter may lack URLs committed after the last checkpoint; it is only a
  pre-filter, so each such URL costs one table look-up (whose primary key
  still finds it), never a refetch.
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
