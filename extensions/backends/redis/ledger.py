"""AOPIC's ledger shared by the crawler processes of one Redis frontier.

:class:`~extensions.aopic.ledger.AOPICLedger` keeps its scalars (Lambda,
the dividend ``D``, the cash put in, the row count) in the process and
saves them now and then: with several processes on one Redis each saved its
own copy over the others', and each read-modify-wrote cash rows that others
were crediting at the same time, so cash appeared and vanished.
:class:`SharedLedger` keeps the scalars in one Redis hash (``P:{aopic}:ledger``,
:meth:`~extensions.backends.redis.keys.Keys.ledger`) and changes them and the
cash rows only inside server-side scripts, so every change is atomic and
made exactly once:

* :data:`CASH` -- a fetched page's whole AOPIC step (its cash to its
  history, the tax to Lambda, the rest split over its outlinks; rows
  created with ``mark = D`` and counted), or a seed's initial cash;
* :data:`CRAWL_LAMBDA` -- Lambda is crawled if it holds at least the cash
  of the page about to be fetched (a buffered write: no answer needed).

On a single Redis :data:`CASH` takes the ledger hash and every cash hash it
touches (one script, one round trip per page, as before). A Redis Cluster
cannot run a script over keys of several slots, so there a page costs two
round trips: :data:`CASH` on the page's tag (its take and split), then on
each link's tag (credits), each with the dividend ``d`` the process last
saw; then :data:`JOIN` (buffered) adds the tax to Lambda and counts the new
rows in the ledger's slot. A row created with a stale ``d`` is owed the
dividends since ``d``; :data:`JOIN` charges them to Lambda (``D - d`` per
new row, whenever it runs), which keeps the total exact whatever order the
scripts run in. On a cluster a process killed between these calls loses
that page's cash; on a single Redis nothing.

Conservation, as the base ledger defines it, summed over the rows in Redis::

    sum(cash + D - mark) + Lambda == put_in

:meth:`SharedLedger.totals` reads it back (a scan: for tests and tools).
The process keeps a copy of the scalars, refreshed by every script's
answer, for what only orders URLs (a URL's cash, the mean cash).

In a crawl, :meth:`SharedLedger.distribute_then` sends a page's
:data:`CASH` (with its links' rows) through the shared frontier's worker
channel (:mod:`extensions.backends.redis.worker`) instead of waiting for it on
the reactor thread: the answer comes back to a callback. The store's
buffered writes (the page's link records, its content-seen group) go first
in the same job, so they still reach Redis before the page's ``FINISH``,
which the same FIFO sends later. On a cluster the worker thread sends the
credits itself as soon as the take is answered (a ``follow`` of the job),
and the callback buffers the :data:`JOIN`: the reactor waits for neither
round trip. A process killed then loses the cash of the pages whose
payment was on its way (a few per process; on a single Redis none).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from extensions.aopic.ledger import META_KEY, AOPICLedger, LedgerTotals, Paid
from extensions.backends.redis.connection import script
from extensions.backends.redis.keys import tag_of
from extensions.backends.redis.rows import CASH_LUA
from extensions.frontier.store import Entry

Taken = tuple[float, float, int, float]  # cash taken, history, visits, each outlink's share
Change = tuple[float, float, bool]  # a credited URL's cash before, after, and whether it had a row

#: the ledger hash's fields, in the order every script returns them
FIELDS = ("lambda", "dividend", "put_in", "rows", "crawls")

_LIB = CASH_LUA + """
local function fmt(x) return string.format('%.17g', x) end
local FIELDS = {'lambda', 'dividend', 'put_in', 'rows', 'crawls'}
local function load(key)
  local v = redis.call('HMGET', key, unpack(FIELDS))
  local s = {}
  for i = 1, #FIELDS do s[FIELDS[i]] = tonumber(v[i]) or 0 end
  return s
end
local function save(key, s)
  redis.call('HSET', key, 'lambda', fmt(s.lambda), 'dividend', fmt(s.dividend), 'put_in', fmt(s.put_in),
             'rows', s.rows, 'crawls', s.crawls)
end
local function state(s)
  return {fmt(s.lambda), fmt(s.dividend), fmt(s.put_in), s.rows, s.crawls}
end
"""

#: One page's AOPIC step or a seed's cash. KEYS: the ledger hash (if
#: ARGV[1] is '1'), then cash hashes. ARGV: shared ('1': KEYS[1] is the
#: ledger; '0': a cluster, no ledger here), d (the dividend to use without
#: the ledger), tax, outlinks (the page's, for the split; may exceed the
#: credits here), take (key index, 0: none), take fingerprint, credit
#: amount ('': the split's share), mode ('': the credits are the split;
#: 'put': cash put in; 'seed': put in, only for URLs without cash), then
#: key index and fingerprint per credit. A row is settled at the larger of
#: d and its own mark (a lower bound of the dividend), so a stale d never
#: takes more than the row holds. Returns {cash taken, history, visits,
#: share, to Lambda, new rows, cash put in, {before, after, existed} per
#: credit, ledger state or {}}.
CASH = script(_LIB + """
local shared = ARGV[1] == '1'
local s
if shared then s = load(KEYS[1]) else s = {dividend = tonumber(ARGV[2])} end
local d, tax, outlinks = s.dividend, tonumber(ARGV[3]), tonumber(ARGV[4])
local new, put_in, cash, history, visits, to_lambda, share = 0, 0, 0, 0, 0, 0, 0
local take = tonumber(ARGV[5])
if take > 0 then
  local row, mark = get(KEYS[take], ARGV[6]), d
  if row then
    mark = math.max(d, row[3])
    cash, history, visits = row[1] + (mark - row[3]), row[2], row[4]
  else
    new = new + 1
  end
  history, visits = history + cash, visits + 1
  put(KEYS[take], ARGV[6], 0, history, mark, visits)
  if outlinks <= 0 then
    to_lambda = cash
  else
    to_lambda = cash * tax
    share = (cash - to_lambda) / outlinks
  end
end
local amount = share
if ARGV[7] ~= '' then amount = tonumber(ARGV[7]) end
local mode = ARGV[8]
local credits = {}
for i = 9, #ARGV, 2 do
  local key, fp = KEYS[tonumber(ARGV[i])], ARGV[i + 1]
  local row = get(key, fp)
  local before, hist, vis, mark, existed = 0, 0, 0, d, 0
  if row then
    mark = math.max(d, row[3])
    before, hist, vis, existed = row[1] + (mark - row[3]), row[2], row[4], 1
  end
  local after = before
  if amount > 0 and not (mode == 'seed' and before ~= 0) then
    after = before + amount
    if mode ~= '' then put_in = put_in + amount end
    if existed == 0 then new = new + 1 end
    put(key, fp, after, hist, mark, vis)
  end
  credits[#credits + 1] = {fmt(before), fmt(after), existed}
end
local ledger = {}
if shared then
  s.lambda, s.rows, s.put_in = s.lambda + to_lambda, s.rows + new, s.put_in + put_in
  save(KEYS[1], s)
  ledger = state(s)
end
return {fmt(cash), fmt(history), visits, fmt(share), fmt(to_lambda), new, fmt(put_in), credits, ledger}
""")

#: A cluster's half of :data:`CASH` in the ledger's slot: the tax to Lambda,
#: new rows counted, the dividends a row created with ``d`` got before
#: joining charged to Lambda, seeds' cash put in. KEYS: the ledger. ARGV:
#: to Lambda, new rows, d, put in. Returns the ledger state.
JOIN = script(_LIB + """
local s = load(KEYS[1])
local new = tonumber(ARGV[2])
s.lambda = s.lambda + tonumber(ARGV[1]) - new * (s.dividend - tonumber(ARGV[3]))
s.rows, s.put_in = s.rows + new, s.put_in + tonumber(ARGV[4])
save(KEYS[1], s)
return state(s)
""")

#: Crawl Lambda if it holds at least ``rival`` (and something): its cash
#: spread equally over every row. KEYS: the ledger. ARGV: rival cash.
#: Returns the ledger state.
CRAWL_LAMBDA = script(_LIB + """
local s = load(KEYS[1])
if s.lambda > 0 and s.lambda >= tonumber(ARGV[1]) and s.rows > 0 then
  s.dividend = s.dividend + s.lambda / s.rows
  s.lambda, s.crawls = 0, s.crawls + 1
  save(KEYS[1], s)
end
return state(s)
""")

#: Fill the ledger hash from a crawl's old per-process copy (``P:meta``
#: ``aopic``), once. KEYS: the ledger. ARGV: the five fields' values.
MIGRATE = script("""
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'lambda', ARGV[1], 'dividend', ARGV[2], 'put_in', ARGV[3],
             'rows', ARGV[4], 'crawls', ARGV[5])
end
return 1
""")


class SharedLedger(AOPICLedger):
    """:class:`AOPICLedger` over a :class:`~extensions.backends.redis.store.RedisStore`
    whose scalars live in Redis and change only in scripts (see the module
    docstring); the attributes ``lambda_cash``, ``dividend``, ``put_in``,
    ``rows`` and ``lambda_crawls`` are this process's latest view of them."""

    shared: ClassVar[bool] = True

    # -- persistence: nothing to save, the state is in Redis -----------------------
    def load(self) -> None:
        """Read the shared scalars (taking over a crawl's old per-process copy)."""
        old = self.store.get_meta(META_KEY)
        if old:
            lam, dividend, put_in, rows, crawls = old.split(",")
            self.store.call(("EVAL", MIGRATE, 1, self._key, lam, dividend, put_in,
                             str(int(float(rows))), str(int(float(crawls)))))
        self._update(self.store.call(("HMGET", self._key, *FIELDS))[0])

    def save(self) -> None:
        """Nothing: every change was made in Redis already."""

    @property
    def _key(self) -> str:
        return self.store.keys.ledger

    def _update(self, state: list[Any]) -> None:
        if not state:
            return
        lam, dividend, put_in, rows, crawls = (0.0 if v is None else float(v) for v in state)
        self.lambda_cash, self.dividend, self.put_in = lam, dividend, put_in
        self.rows, self.lambda_crawls = int(rows), int(crawls)

    # -- writes ----------------------------------------------------------------------
    def seed(self, fingerprint: int) -> tuple[float, float, bool]:
        """Give a seed its initial cash, unless it has cash already (another
        process seeded it): ``(cash before, cash after, had a row)``."""
        return self._run(None, [fingerprint], 0, self.initial_cash, "seed")[1][0]

    def distribute(self, fingerprint: int, links: list[int], entries_of: list[int] | None = None,
                   tax: float | None = None) -> tuple[Paid, dict[int, Entry]]:
        """The page was fetched: its cash to its history, the tax (``tax``,
        else the ledger's) to Lambda, the rest split over ``links`` (none:
        all to Lambda), in one atomic script on a single Redis. Also returns
        the URL rows of ``entries_of``, read in the same round trip."""
        (cash, history, visits, _), changes, entries = self._run(fingerprint, links, len(links),
                                                                 entries_of=entries_of or [], tax=tax)
        return Paid(cash, history, visits, changes), entries

    def distribute_then(self, io: Any, fingerprint: int, links: list[int], entries_of: list[int],
                        then: Callable[[Paid, dict[int, Entry]], None],
                        failed: Callable[[Exception], None], tax: float | None = None) -> None:
        """:meth:`distribute` through ``io`` (a worker channel on this
        single Redis, see the module docstring): ``then`` gets its result on
        the reactor thread, ``failed`` a Redis failure."""
        if self.store.cluster:
            self._distribute_per_tag_then(io, fingerprint, links, entries_of, then, failed, tax)
            return
        command = self._cash_command(fingerprint, links, len(links), None, "", tax)
        reads, rows_of = self.store.entry_reads(entries_of)
        writes = self.store.connection.take_buffered()  # before the CASH, as a store call would send them

        def answered(answers: list[Any]) -> None:
            answer = answers[len(writes)]
            taken, changes, _, _ = _decode(answer)
            self._update(answer[8])
            then(Paid(taken[0], taken[1], taken[2], changes), rows_of(answers[len(writes) + 1:]))
        io.submit([*writes, command, *reads], answered, failed)

    def _distribute_per_tag_then(self, io: Any, take: int, credits: list[int], entries_of: list[int],
                                 then: Callable[[Paid, dict[int, Entry]], None],
                                 failed: Callable[[Exception], None], tax: float | None = None) -> None:
        """:meth:`_run_per_tag` of a fetched page through ``io`` on a
        cluster: the take (with the links' rows), then, sent by the worker
        thread from its answer, the credits per tag; ``then`` gets both on
        the reactor thread, which buffers the :data:`JOIN`."""
        d, outlinks = repr(self.dividend), len(credits)
        view = ("HMGET", self._key, *FIELDS)
        reads, rows_of = self.store.entry_reads(entries_of)
        writes = self.store.connection.take_buffered()  # before the CASH, as a store call would send them
        first = [*writes, self._take_command(take, d, outlinks, tax), view, *reads]
        by_tag = _positions_by_tag(credits)

        def credit(answers: list[Any]) -> tuple[Any, ...]:  # on the worker thread: no state touched
            try:
                commands = self._credit_commands(by_tag, credits, d, outlinks, float(answers[len(writes)][3]), "")
            except Exception as err:  # noqa: BLE001 - reported on the reactor thread, the page's pipeline ends
                return [], None, lambda _, error=err: failed(error)
            return [*commands, view], None, lambda found: paid(answers, found), failed

        def paid(answers: list[Any], found: list[Any]) -> None:  # on the reactor thread
            try:
                answer, state = answers[len(writes)], answers[len(writes) + 1]
                self._update(state)
                self._update(found[-1])
                taken, _, new, _ = _decode(answer)
                changes, tag_new, put_in = _merge_credits(by_tag, found[:-1], len(credits))
                entries = rows_of(answers[len(writes) + 2:])
            except Exception as err:  # noqa: BLE001 - the page's pipeline must end
                failed(err)
                return
            # buffered, as on the synchronous path: the next store call or payment sends it
            self.store.write("EVAL", JOIN, 1, self._key, repr(float(answer[4])), new + tag_new, d, repr(put_in))
            then(Paid(taken[0], taken[1], taken[2], changes), entries)
        io.submit(first, None, failed, follow=credit)

    def take(self, fingerprint: int, rows: Any = None) -> tuple[float, float, int]:
        """The page was fetched and pays no outlinks: its cash all to Lambda."""
        cash, history, visits, _ = self._run(fingerprint, [], 0)[0]
        return cash, history, visits

    def split(self, cash: float, outlinks: int) -> float:
        raise NotImplementedError("SharedLedger splits inside distribute(): take and split are one step")

    def credit_many(self, amounts: list[tuple[int, float]], rows: Any = None) -> list[tuple[float, float, bool]]:
        """Add cash to URLs from outside the ledger (counted as cash put in)."""
        changes = []
        for fp, amount in amounts:
            changes += self._run(None, [fp], 0, amount, "put")[1]
        return changes

    def maybe_crawl_lambda(self, rival_cash: float) -> bool:
        """Ask Redis to crawl Lambda if it holds at least ``rival_cash``
        (buffered); whether this process's view says it will."""
        self.store.write("EVAL", CRAWL_LAMBDA, 1, self._key, repr(float(rival_cash)))
        return super().maybe_crawl_lambda(rival_cash)

    # -- the scripts ------------------------------------------------------------------
    def _run(self, take: int | None, credits: list[int], outlinks: int, amount: float | None = None,
             mode: str = "", entries_of: Sequence[int] = (),
             tax: float | None = None) -> tuple[Taken, list[Change], dict[int, Entry]]:
        """:data:`CASH` on one Redis (one script) or a cluster (per tag,
        then :data:`JOIN`). Returns the take ``(cash, history, visits,
        share)``, the credits' changes and the URL rows of ``entries_of``."""
        if self.store.cluster:
            return self._run_per_tag(take, credits, outlinks, amount, mode, entries_of, tax)
        command = self._cash_command(take, credits, outlinks, amount, mode, tax)
        (answer,), entries = self.store.call_with_entries([command], entries_of)
        taken, changes, _, _ = _decode(answer)
        self._update(answer[8])
        return taken, changes, entries

    def _cash_command(self, take: int | None, credits: list[int], outlinks: int, amount: float | None,
                      mode: str, tax: float | None = None) -> tuple[Any, ...]:
        """:data:`CASH` over the ledger and every cash hash it touches (a single Redis)."""
        keys: list[str] = [self._key]
        index: dict[str, int] = {}

        def key_of(fp: int) -> int:
            key = self.store.keys.cash(tag_of(fp))
            if key not in index:
                keys.append(key)
                index[key] = len(keys)
            return index[key]

        take_index = 0 if take is None else key_of(take)
        pairs = [item for fp in credits for item in (key_of(fp), fp)]
        args = ["1", "0", self._tax(tax), outlinks, take_index, take or 0,
                "" if amount is None else repr(float(amount)), mode, *pairs]
        return ("EVAL", CASH, len(keys), *keys, *args)

    def _run_per_tag(self, take: int | None, credits: list[int], outlinks: int, amount: float | None,
                     mode: str, entries_of: Sequence[int],
                     tax: float | None = None) -> tuple[Taken, list[Change], dict[int, Entry]]:
        d = repr(self.dividend)
        taken: Taken = (0.0, 0.0, 0, 0.0)
        to_lambda, new, put_in, entries = 0.0, 0, 0.0, None
        view = ("HMGET", self._key, *FIELDS)  # the dividend for the next page (one slot per command)
        if take is not None:
            (answer, state), entries = self.store.call_with_entries(
                [self._take_command(take, d, outlinks, tax), view], entries_of)
            self._update(state)
            taken, _, new, _ = _decode(answer)
            to_lambda = float(answer[4])
            amount = taken[3] if amount is None else amount
        by_tag = _positions_by_tag(credits)
        commands = self._credit_commands(by_tag, credits, d, outlinks, amount or 0.0, mode)
        changes: list[Change] = [(0.0, 0.0, False)] * len(credits)
        if commands or entries is None:
            found, read = self.store.call_with_entries([*commands, view], [] if entries is not None else entries_of)
            self._update(found.pop())
            entries = read if entries is None else entries
            changes, tag_new, put_in = _merge_credits(by_tag, found, len(credits))
            new += tag_new
        self.store.write("EVAL", JOIN, 1, self._key, repr(to_lambda), new, d, repr(put_in))
        return taken, changes, entries

    def _take_command(self, take: int, d: str, outlinks: int, tax: float | None = None) -> tuple[Any, ...]:
        """A cluster's :data:`CASH` taking a fetched page's cash, in its slot."""
        return ("EVAL", CASH, 1, self.store.keys.cash(tag_of(take)), "0", d, self._tax(tax), outlinks,
                1, take, "", "")

    def _tax(self, tax: float | None) -> str:
        """The tax argument of :data:`CASH`: a page's own, else the ledger's."""
        return repr(float(self.tax if tax is None else tax))

    def _credit_commands(self, by_tag: dict[str, list[int]], credits: list[int], d: str, outlinks: int,
                         amount: float, mode: str) -> list[tuple[Any, ...]]:
        """A cluster's :data:`CASH` crediting ``amount`` to ``credits``, one
        per slot (``by_tag``: positions in ``credits``); none without cash."""
        if amount <= 0:
            return []
        return [("EVAL", CASH, 1, self.store.keys.cash(tag), "0", d, repr(self.tax), outlinks, 0, 0,
                 repr(float(amount)), mode, *[item for p in positions for item in (1, credits[p])])
                for tag, positions in by_tag.items()]

    # -- reads ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the shared scalars again (this process's view)."""
        self._update(self.store.call(("HMGET", self._key, *FIELDS))[0])

    def totals(self) -> LedgerTotals:
        """The conserved sum over every row in Redis (scans: tests, tools)."""
        self.refresh()
        cash, history, marks = self.store.cash_totals()
        count = self.store.cash_count()
        return LedgerTotals(cash, count * self.dividend - marks, self.lambda_cash, self.put_in, history, count)


def _positions_by_tag(credits: list[int]) -> dict[str, list[int]]:
    """The positions in ``credits`` of each slot tag's URLs."""
    by_tag: dict[str, list[int]] = {}
    for position, fp in enumerate(credits):
        by_tag.setdefault(tag_of(fp), []).append(position)
    return by_tag


def _merge_credits(by_tag: dict[str, list[int]], answers: list[Any], count: int) -> tuple[list[Change], int, float]:
    """The per-slot credit answers as one change per credited URL (in
    ``credits`` order), with the new rows and the cash put in, summed."""
    changes: list[Change] = [(0.0, 0.0, False)] * count
    new, put_in = 0, 0.0
    for positions, answer in zip(by_tag.values(), answers):
        _, tag_changes, tag_new, tag_put_in = _decode(answer)
        new, put_in = new + tag_new, put_in + tag_put_in
        for p, change in zip(positions, tag_changes):
            changes[p] = change
    return changes, new, put_in


def _decode(answer: list[Any]) -> tuple[Taken, list[Change], int, float]:
    """A :data:`CASH` answer: the take, the credits, new rows, cash put in."""
    cash, history, visits, share, _, new, added, credits = answer[:8]
    changes = [(float(before), float(after), bool(existed)) for before, after, existed in credits]
    return (float(cash), float(history), int(visits), float(share)), changes, int(new), float(added)
