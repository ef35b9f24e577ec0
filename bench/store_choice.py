"""SQLite (the frontier's store) against LMDB on the frontier's store workload.

The same logical workload runs on two stores behind one interface:

* ``sqlite``: :class:`extensions.backends.sqlite.store.SQLiteStore` itself (WAL,
  ``synchronous=NORMAL``, 64 MB cache, ``mmap_size=0``, one open transaction
  committed at each checkpoint), so the real store's statements are measured;
* ``lmdb``: :class:`LMDBStore` below (py-lmdb; ``requirements-bench.txt``):
  a ``urls`` database keyed by the fingerprint as 8 big-endian bytes (the high
  24 bits hash the host, so one host's keys cluster, as in SQLite's B-tree),
  value a packed row (struct header + url/host/referer/extra bytes); a
  ``queue_items`` database keyed by (queue id, seq); one write transaction
  committed at each checkpoint; 64 GiB map (sparse); lmdb's default
  durability (``sync=True``: an fsync per commit, i.e. per checkpoint).

Phases, each timed around the store calls only (URLs, fingerprints and
entries are made outside the timer, one checkpoint's worth at a time):

1. *insert*: N new URLs (``http://h{i*7919 % hosts}.example/p/{i}``, real
   host-local fingerprints from :mod:`extensions.frontier.fingerprint`, 100 k
   hosts by default), each ``insert_new([entry])`` (add-if-new: ``INSERT OR
   IGNORE`` / ``put(overwrite=False)``) and appended to one of 8 front queues
   through a 256-entry tail buffer, as ``BufferedQueue`` spills;
2. *exists*: ``status_of`` of ``--seen-ops`` random known fingerprints, then
   of as many unknown ones (the URL-seen test once the in-memory cache
   misses; the file is in the page cache, so this is the store's lookup cost,
   not a cold disk seek);
3. *pop+done*: every queue drained in order, ``pop(name, 256)`` then
   ``get_many`` (the frontier rebuilds requests from the rows) then one
   ``set_status([fp], DONE, now)`` per item.

A checkpoint (commit) every ``--checkpoint-every`` ops (50 k) in every
phase. Each (size, candidate, run) is a fresh subprocess, so ``ru_maxrss`` is
that run's own; runs interleave the candidates (alternating which goes first).
The table shows medians; the ratio column is LMDB/SQLite (for ops/s, > 1
means LMDB is faster; for sizes and RSS, > 1 means LMDB uses more). LMDB maps
its file, so the pages it reads count in its RSS (file-backed, reclaimable).

    python -m bench.store_choice --sizes 1e6 --runs 3
    python -m bench.store_choice --sizes 1e7 --runs 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from extensions.frontier.store import Entry, Status

CANDIDATES = ("sqlite", "lmdb")
FRONT_QUEUES = 8
BUFFER = 256  # FRONTIER_QUEUE_BUFFER: spill and refill unit

# -- LMDB store -------------------------------------------------------------
# status, level, priority, depth, seq, discovered, fetched (NaN: NULL), flags,
# then the byte lengths of url, host, referer (0xFFFF: NULL); extra follows.
_ROW = struct.Struct("<BBiHqddBHHH")
_FETCHED = struct.Struct("<d")
_FETCHED_AT = 1 + 1 + 4 + 2 + 8 + 8  # offset of 'fetched' in _ROW
_KEY = struct.Struct(">Q")
_QKEY = struct.Struct(">HQ")  # queue id, seq + 2**63 (seq may be negative)
_NULL = 0xFFFF
_MASK64 = (1 << 64) - 1
_BIAS = 1 << 63


def _fp_key(fp: int) -> bytes:
    return _KEY.pack(fp & _MASK64)  # signed -> unsigned keeps host clustering


def _fp_of(key: bytes) -> int:
    value = _KEY.unpack(key)[0]
    return value - (1 << 64) if value >= _BIAS else value


class LMDBStore:
    """The subset of the frontier store this benchmark drives, on LMDB."""

    def __init__(self, path: str | Path, map_size: int = 64 << 30) -> None:
        import lmdb  # noqa: PLC0415 - an optional benchmark dependency

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(str(self.path), map_size=map_size, max_dbs=4)
        self.urls_db = self.env.open_db(b"urls")
        self.queue_db = self.env.open_db(b"queue_items")
        self.meta_db = self.env.open_db(b"meta")
        self.txn = self.env.begin(write=True)
        self._ids: dict[str, int] = {}
        self._lengths: dict[str, int] = {}
        self._bounds: dict[str, list[int]] = {}
        self._seq = 0

    def checkpoint(self) -> None:
        self.txn.commit()
        self.txn = self.env.begin(write=True)

    def close(self, clean: bool = True) -> None:
        self.txn.put(b"clean", b"1" if clean else b"0", db=self.meta_db)
        self.txn.commit()
        self.env.close()

    # queues
    def _qid(self, name: str) -> int:
        qid = self._ids.get(name)
        if qid is None:
            qid = self._ids[name] = len(self._ids)
            self.txn.put(b"queue:" + name.encode(), str(qid).encode(), db=self.meta_db)
        return qid

    def push(self, name: str, fingerprints: Sequence[int]) -> None:
        if not fingerprints:
            return
        qid, txn, db = self._qid(name), self.txn, self.queue_db
        bounds = self._bounds.setdefault(name, [1, 0])
        start = bounds[1] + 1
        bounds[1] += len(fingerprints)
        for i, fp in enumerate(fingerprints):
            txn.put(_QKEY.pack(qid, start + i + _BIAS), _fp_key(fp), db=db)
        self._lengths[name] = self._lengths.get(name, 0) + len(fingerprints)

    def pop(self, name: str, count: int) -> list[int]:
        if not self._lengths.get(name):
            return []
        qid = self._qid(name)
        out: list[int] = []
        with self.txn.cursor(db=self.queue_db) as cursor:
            if cursor.set_range(_QKEY.pack(qid, 0)):
                while len(out) < count:
                    key = cursor.key()
                    if not key or _QKEY.unpack(key)[0] != qid:
                        break
                    out.append(_fp_of(cursor.value()))
                    if not cursor.delete():  # moves to the next item
                        break
        if out:
            self._bounds[name][0] += len(out)
        self._lengths[name] -= len(out)
        return out

    def length(self, name: str) -> int:
        return self._lengths.get(name, 0)

    # URL table
    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        txn, db = self.txn, self.urls_db
        result = []
        for e in entries:
            self._seq += 1
            result.append(txn.put(_fp_key(e.fingerprint), self._pack(e, now), db=db, overwrite=False))
        return result

    def _pack(self, e: Entry, now: float) -> bytes:
        url, host = e.url.encode(), e.host.encode()
        referer = None if e.referer is None else e.referer.encode()
        extra = b"" if e.extra is None else e.extra.encode()
        return b"".join((
            _ROW.pack(int(Status.QUEUED), e.level, e.priority, e.depth, self._seq, now, math.nan,
                      e.flags, len(url), len(host), _NULL if referer is None else len(referer)),
            url, host, referer or b"", extra,
        ))

    @staticmethod
    def _unpack(fp: int, row: bytes) -> Entry:
        _, level, priority, depth, _, _, _, flags, nu, nh, nr = _ROW.unpack_from(row)
        at = _ROW.size
        url = row[at : at + nu].decode()
        at += nu
        host = row[at : at + nh].decode()
        at += nh
        referer = None
        if nr != _NULL:
            referer = row[at : at + nr].decode()
            at += nr
        extra = row[at:].decode() or None
        return Entry(fp, url, host, level, priority, depth, referer, flags, extra, None)

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        txn, db = self.txn, self.urls_db
        found = {}
        for fp in fingerprints:
            row = txn.get(_fp_key(fp), db=db)
            if row is not None:
                found[fp] = self._unpack(fp, row)
        return found

    def set_status(self, fingerprints: Iterable[int], status: Status, now: float | None = None) -> None:
        txn, db = self.txn, self.urls_db
        for fp in fingerprints:
            key = _fp_key(fp)
            row = txn.get(key, db=db)
            if row is None:
                continue
            row = bytearray(row)
            row[0] = int(status)
            if now is not None:
                _FETCHED.pack_into(row, _FETCHED_AT, now)
            txn.put(key, row, db=db)

    def status_of(self, fingerprint: int) -> Status | None:
        row = self.txn.get(_fp_key(fingerprint), db=self.urls_db)
        return None if row is None else Status(row[0])


# -- the workload -------------------------------------------------------------
def _entries(start: int, stop: int, hosts: int) -> list[Entry]:
    from extensions.frontier.fingerprint import fingerprint  # noqa: PLC0415

    out = []
    for i in range(start, stop):
        host = f"h{(i * 7919) % hosts}.example"
        url = f"http://{host}/p/{i}"
        out.append(Entry(fingerprint(url, host), url, host, level=i % FRONT_QUEUES, depth=i % 5))
    return out


def _open(candidate: str, directory: Path):  # noqa: ANN202
    if candidate == "sqlite":
        from extensions.backends.sqlite.store import SQLiteStore  # noqa: PLC0415

        store = SQLiteStore(directory / "frontier.sqlite3")
        store.open()
        return store
    return LMDBStore(directory / "frontier.lmdb")


def _disk(directory: Path) -> tuple[float, float]:
    files = [f for f in directory.rglob("*") if f.is_file()]
    apparent = sum(f.stat().st_size for f in files) / 2**20
    allocated = sum(f.stat().st_blocks * 512 for f in files) / 2**20
    return apparent, allocated


def _child(args: argparse.Namespace) -> dict:
    n, every = int(float(args.size)), args.checkpoint_every
    directory = Path(tempfile.mkdtemp(prefix="store-choice-", dir=args.tmpdir))
    result: dict = {"candidate": args.candidate, "size": n}
    try:
        store = _open(args.candidate, directory)
        tails: list[list[int]] = [[] for _ in range(FRONT_QUEUES)]
        now = 1.7e9

        # 1. insert + queue append
        elapsed = 0.0
        for start in range(0, n, every):
            chunk = _entries(start, min(n, start + every), args.hosts)
            t0 = time.perf_counter()
            for entry in chunk:
                if store.insert_new([entry], now)[0]:
                    tail = tails[entry.level]
                    tail.append(entry.fingerprint)
                    if len(tail) >= BUFFER:
                        store.push(f"front/{entry.level}", tail)
                        tail.clear()
            store.checkpoint()
            elapsed += time.perf_counter() - t0
        t0 = time.perf_counter()
        for level, tail in enumerate(tails):
            store.push(f"front/{level}", tail)
        store.checkpoint()
        elapsed += time.perf_counter() - t0
        result["insert_ops"] = n / elapsed

        # 2. existence tests: known, then unknown fingerprints
        rng = random.Random(1)
        ops = args.seen_ops
        known = [e.fingerprint for i in rng.sample(range(n), min(ops, n)) for e in _entries(i, i + 1, args.hosts)]
        unknown = [e.fingerprint for e in _entries(n, n + ops, args.hosts)]
        for label, sample, expect in (("known", known, True), ("unknown", unknown, False)):
            t0 = time.perf_counter()
            hits = 0
            for k, fp in enumerate(sample, 1):
                hits += store.status_of(fp) is not None
                if k % every == 0:
                    store.checkpoint()
            result[f"exists_{label}_ops"] = len(sample) / (time.perf_counter() - t0)
            assert hits == (len(sample) if expect else 0), (label, hits)
        del known, unknown

        # 3. drain every queue in order; read the rows; mark each done
        t0 = time.perf_counter()
        done = 0
        for level in range(FRONT_QUEUES):
            name = f"front/{level}"
            while fps := store.pop(name, BUFFER):
                rows = store.get_many(fps)
                for fp in fps:
                    now += 1e-3
                    store.set_status([fp], Status.DONE, now)
                    done += 1
                    if done % every == 0:
                        store.checkpoint()
                assert len(rows) == len(fps)
        store.checkpoint()
        result["pop_done_ops"] = done / (time.perf_counter() - t0)
        assert done == n, (done, n)
        if args.candidate == "sqlite":
            counts = store.count_by_status()
        else:
            with store.txn.cursor(db=store.urls_db) as cursor:
                counts = {}
                for _, row in cursor:
                    counts[Status(row[0])] = counts.get(Status(row[0]), 0) + 1
        assert counts == {Status.DONE: n}, counts
        store.close(clean=True)
        result["disk_mb"], result["disk_alloc_mb"] = _disk(directory)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return result


# -- the parent: interleaved runs, one table ---------------------------------
ROWS = (
    ("insert (+queue) ops/s", "insert_ops", "{:,.0f}"),
    ("exists known ops/s", "exists_known_ops", "{:,.0f}"),
    ("exists unknown ops/s", "exists_unknown_ops", "{:,.0f}"),
    ("pop+row+done ops/s", "pop_done_ops", "{:,.0f}"),
    ("file size MB", "disk_mb", "{:,.1f}"),
    ("  allocated MB", "disk_alloc_mb", "{:,.1f}"),
    ("peak RSS MB", "peak_rss_mb", "{:,.1f}"),
)


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6", help="comma-separated N (default 1e6)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--seen-ops", type=int, default=100_000, help="known and as many unknown")
    parser.add_argument("--checkpoint-every", type=int, default=50_000)
    parser.add_argument("--timeout", type=float, default=3600.0, help="bound per child run (s)")
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--candidate", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _run_child(root: Path, args: argparse.Namespace, size: str, candidate: str) -> dict:
    command = [sys.executable, "-m", "bench.store_choice", "--child", "--size", size,
               "--candidate", candidate, "--hosts", str(args.hosts), "--seen-ops", str(args.seen_ops),
               "--checkpoint-every", str(args.checkpoint_every)]
    if args.tmpdir:
        command += ["--tmpdir", args.tmpdir]
    out = subprocess.run(command, capture_output=True, text=True, cwd=root, check=False,
                         timeout=args.timeout)
    if out.returncode != 0:
        raise SystemExit(f"{candidate} N={size} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return
    import lmdb  # noqa: PLC0415

    root = Path(__file__).resolve().parents[1]
    print(f"store_choice: hosts={args.hosts} seen-ops={args.seen_ops}+{args.seen_ops} "
          f"checkpoint every {args.checkpoint_every} ops, runs={args.runs} (median), "
          f"sqlite {__import__('sqlite3').sqlite_version}, lmdb {lmdb.version()} "
          f"(py-lmdb {lmdb.__version__}), cpus={os.cpu_count()}", flush=True)
    for size in args.sizes.split(","):
        results: dict[str, list[dict]] = {c: [] for c in CANDIDATES}
        for run in range(args.runs):
            order = CANDIDATES if run % 2 == 0 else CANDIDATES[::-1]
            for candidate in order:
                r = _run_child(root, args, size, candidate)
                results[candidate].append(r)
                print(f"  run {run + 1} {candidate:<6} " + " ".join(
                    f"{key}={r[key]:.0f}" for _, key, _ in ROWS if key.endswith("_ops")),
                    file=sys.stderr, flush=True)
        print(f"\nN = {int(float(size)):,}")
        print(f"{'metric':<24} {'SQLite':>12} {'LMDB':>12} {'LMDB/SQLite':>12}")
        for label, key, fmt in ROWS:
            s = statistics.median(r[key] for r in results["sqlite"])
            m = statistics.median(r[key] for r in results["lmdb"])
            print(f"{label:<24} {fmt.format(s):>12} {fmt.format(m):>12} {m / s:>11.2f}x")
        print("runs (ops/s: insert, exists known, exists unknown, pop+done):")
        for candidate in CANDIDATES:
            runs = "; ".join(", ".join(f"{r[key]:.0f}" for _, key, _ in ROWS[:4]) for r in results[candidate])
            print(f"  {candidate:<6} {runs}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
