"""The frontier's embedded store: one SQLite file, ``JOBDIR/frontier.sqlite3``.

WAL, one open transaction committed at each checkpoint (and before each
hand-out with ``FRONTIER_WRITE_AHEAD``); the ``urls`` rows are authoritative,
``queue_items`` holds the queues' order, ``meta`` the schema and ``clean``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from extensions.backends.sqlite.rowcache import RowCache
from extensions.backends.sqlite.tables import (
    SQLiteCashTable,
    SQLiteCensus,
    SQLiteContentGroups,
    SQLiteHostTable,
    SQLiteLinkTable,
    SQLiteQueues,
    SQLiteRevisitTable,
    SQLiteURLTable,
)
from extensions.frontier.store import FrontierStoreError

SCHEMA_VERSION = "1"
#: WAL pages before SQLite checkpoints (default 1000): fewer, larger checkpoints cost less.
WAL_CHECKPOINT_PAGES = 8000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisits (
  fingerprint   INTEGER PRIMARY KEY,  -- the URL's fingerprint (urls.fingerprint)
  due           REAL,                 -- unix time it is next due; NULL: not scheduled (taken, or given up)
  interval      REAL    NOT NULL,     -- current re-visit interval, seconds
  visits        INTEGER NOT NULL,     -- fetches answered (200, 304, 404/410)
  changes       INTEGER NOT NULL,     -- visits that found the page changed
  first_visit   REAL    NOT NULL,     -- unix time of the first fetch
  last_visit    REAL    NOT NULL,     -- unix time of the latest fetch
  last_change   REAL    NOT NULL,     -- unix time the latest change was seen
  content       INTEGER,              -- content fingerprint of the latest 200
  etag          TEXT,                 -- validators of the latest 200
  last_modified TEXT,
  gone          INTEGER NOT NULL);    -- consecutive 404/410 after a 200
CREATE INDEX IF NOT EXISTS revisits_due ON revisits (due) WHERE due IS NOT NULL;
CREATE INDEX IF NOT EXISTS revisits_gone ON revisits (fingerprint) WHERE gone > 0;
CREATE TABLE IF NOT EXISTS urls (
  fingerprint INTEGER PRIMARY KEY,  -- signed 64-bit: high 24 bits the host's, low 40 the URL's
  url TEXT NOT NULL, host TEXT NOT NULL,  -- as requested; host lower case
  status INTEGER NOT NULL,  -- see the statuses table
  -- front queue, request.priority, depth, discovery order
  level INTEGER NOT NULL, priority INTEGER NOT NULL, depth INTEGER NOT NULL, seq INTEGER NOT NULL,
  discovered REAL NOT NULL, fetched REAL,  -- unix times
  referer TEXT, flags INTEGER NOT NULL,  -- 1 dont_filter, 2 blob, 4 memory-only
  extra TEXT,  -- JSON: compact meta keys, callback names
  blob BLOB);  -- pickle of request.to_dict() when not compact
CREATE TABLE IF NOT EXISTS queue_items (
  queue TEXT NOT NULL, seq INTEGER NOT NULL, fingerprint INTEGER NOT NULL,
  PRIMARY KEY (queue, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (
  host TEXT PRIMARY KEY, crawl_delay REAL, first_seen REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS widened (host TEXT PRIMARY KEY, seconds REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cash (
  fingerprint INTEGER PRIMARY KEY, cash REAL NOT NULL, history REAL NOT NULL,
  mark REAL NOT NULL, visits INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS content_groups (
  fingerprint INTEGER PRIMARY KEY, group_id INTEGER NOT NULL,
  duplicate INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS links (
  source INTEGER PRIMARY KEY, targets BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS statuses (status INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT OR IGNORE INTO statuses VALUES
  (0, 'queued'), (1, 'inflight'), (2, 'done'), (3, 'failed'), (4, 'excluded'),
  (5, 'deferred'), (6, 'refused');
CREATE TABLE IF NOT EXISTS deferrals (
  origin TEXT PRIMARY KEY, reason TEXT NOT NULL, at REAL NOT NULL) WITHOUT ROWID;
DROP VIEW IF EXISTS urls_readable;
CREATE VIEW urls_readable AS
  SELECT u.fingerprint, u.url, u.host, s.name AS status, u.level, u.priority,
         u.depth, datetime(u.discovered, 'unixepoch') AS discovered,
         datetime(u.fetched, 'unixepoch') AS fetched, u.referer, u.flags,
         u.extra, length(u.blob) AS blob_bytes, c.cash, c.history, c.visits,
         g.group_id, g.duplicate, datetime(r.due, 'unixepoch') AS next_due,
         r.visits AS revisit_visits, r.changes, r.gone
  FROM urls u JOIN statuses s USING (status) LEFT JOIN cash c USING (fingerprint)
  LEFT JOIN content_groups g USING (fingerprint) LEFT JOIN revisits r USING (fingerprint);
"""


class SQLiteStore:
    """The tables of :mod:`.tables` on one connection and open transaction."""

    def __init__(self, path: str | Path, cache_mb: int = 8, max_mb: float | None = None) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.round_trips = 0  # an embedded store sends no requests
        self.cache_mb = cache_mb
        self.max_mb = max_mb  # a quota: beyond it writes fail as on a full disk
        self.clean = True
        self.read_only = False
        self._db: sqlite3.Connection | None = None
        self._committed_changes = 0  # the connection's total_changes at the last commit
        self._recent = RowCache()  # statuses and cash rows touched lately (see .rowcache)
        self.queues = SQLiteQueues(self._require)
        self.urls = SQLiteURLTable(self._require, self._recent)
        self.hosts = SQLiteHostTable(self._require)
        self.cash = SQLiteCashTable(self._require, self._recent)
        self.groups = SQLiteContentGroups(self._require)
        self.links = SQLiteLinkTable(self._require)
        self.revisits = SQLiteRevisitTable(self._require)
        self.census = SQLiteCensus(self._require)  # reads only

    # -- lifecycle ---------------------------------------------------------
    def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._configure()
            self._load_counters()
            self._db.execute("BEGIN")
            self.set_meta("clean", "0")
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")
            self._committed_changes = self._db.total_changes
        except (sqlite3.Error, OSError) as err:
            self.abandon()
            raise FrontierStoreError(
                f"cannot open the frontier database {self.location}: {err} "
                "(a corrupt file, a full disk or another program's file; move "
                "it away or choose another JOBDIR)"
            ) from err

    def open_read_only(self) -> None:
        """Open an existing database to read it, a running crawl's too."""
        if not self.path.is_file():
            raise FrontierStoreError(f"no frontier database at {self.location} (check JOBDIR)")
        try:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
            self.get_meta("schema")
            self._load_counters()  # host_count and queue lengths, as a writer's open loads them
        except sqlite3.Error as err:
            self.abandon()
            raise FrontierStoreError(f"cannot read the frontier database {self.location}: {err}") from err
        self.read_only = True

    def _configure(self) -> None:
        db = self._require()
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != ("memory" if str(self.path) == ":memory:" else "wal"):
            raise sqlite3.DatabaseError(f"cannot switch to WAL mode (got {mode})")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        db.execute(f"PRAGMA cache_size=-{int(self.cache_mb) * 1024}")
        db.execute("PRAGMA mmap_size=0")
        if self.max_mb is not None:
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA max_page_count={max(1, int(self.max_mb * 2**20 / page_size))}")
        db.executescript(_SCHEMA)
        version = self.get_meta("schema")
        if version is None:
            self.set_meta("schema", SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version}, expected {SCHEMA_VERSION}")
        has_rows = db.execute("SELECT 1 FROM urls LIMIT 1").fetchone() is not None
        self.clean = self.get_meta("clean") == "1" or not has_rows

    def _load_counters(self) -> None:
        for table in (self.queues, self.urls, self.hosts):
            table.load()

    def checkpoint(self) -> None:
        db = self._require()
        try:
            db.execute("COMMIT")
            db.execute("BEGIN")
        except sqlite3.Error as err:
            self._recent.clear()  # what the file holds now is not known
            raise FrontierStoreError(f"cannot commit {self.location}: {err}") from err
        self._committed_changes = db.total_changes

    def commit(self, before: Callable[[], None] | None = None) -> bool:
        """Commit (``before`` first, in the same transaction) if anything changed; whether it did."""
        if self._require().total_changes == self._committed_changes:
            return False
        if before is not None:
            before()
        self.checkpoint()
        return True

    def close(self, clean: bool = True) -> None:
        if self._db is None or self.read_only:
            return self.abandon()
        self.set_meta("clean", "1" if clean else "0")
        self.checkpoint()
        self._db.execute("COMMIT")
        self._db.close()
        self._db = None

    def abandon(self) -> None:
        """Drop the connection without committing (a simulated crash)."""
        self._recent.clear()
        if self._db is not None:
            self._db.close()  # an open transaction is rolled back
            self._db = None

    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise FrontierStoreError(f"the frontier database {self.location} is not open")
        return self._db

    def get_meta(self, key: str) -> str | None:
        row = self._require().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self._require().execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def memory_usage(self) -> tuple[int, int] | None:
        return None
