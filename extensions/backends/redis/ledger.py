"""AOPIC's ledger shared by the crawler processes of one Redis frontier: its
scalars change with the cash rows only inside scripts, so the cash is
conserved (docs/reference/redis-layout.md). :meth:`SharedLedger.distribute_then`
sends a page's payment through the frontier's worker channel."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from extensions.aopic.ledger import AOPICLedger, Paid
from extensions.backends.redis.fpset import member
from extensions.backends.redis.keys import positions_by
from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.scripts import lua
from extensions.backends.redis.worker import DirectIO
from extensions.frontier.store import Entry

Taken = tuple[float, float, int, float]  # cash taken, history, visits, each outlink's share
Change = tuple[float, float, bool]  # a credited URL's cash before, after, and whether it had a row
_CREDIT = struct.Struct(">ddB")  # a credit in CASH's answer: before, after, existed

#: the ledger hash's fields, in the order every script returns them
FIELDS = ("lambda", "dividend", "put_in", "rows", "crawls")

CASH, JOIN = lua("ledger_cash"), lua("ledger_join")
CRAWL_LAMBDA = lua("ledger_crawl_lambda")


class SharedLedger(AOPICLedger):
    """:class:`AOPICLedger` whose scalars live in Redis; its attributes are
    this process's latest view of them."""

    # -- persistence: nothing to save, the state is in Redis -----------------------
    def load(self) -> None:
        """Read the shared scalars."""
        self.refresh()

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
        """The page's cash to its history, the tax to Lambda, the rest split
        over ``links``; with the URL rows of ``entries_of``, in one round trip."""
        (cash, history, visits, _), changes, entries = self._run(fingerprint, links, len(links),
                                                                 entries_of=entries_of or [], tax=tax)
        return Paid(cash, history, visits, changes), entries

    def distribute_then(self, io: Any, fingerprint: int, links: list[int],
                        entries_of: list[int] | Callable[[list[Change]], Sequence[int]],
                        then: Callable[[Paid, dict[int, Entry]], None],
                        failed: Callable[[Exception], None], tax: float | None = None) -> None:
        """:meth:`distribute` through ``io``: ``then`` gets its result on the reactor thread,
        ``failed`` a Redis failure. ``entries_of`` may be a function of the credits' changes
        (called on ``io``'s thread): only the rows it names are read, in a second round trip."""
        self._pay(io, fingerprint, links, len(links), None, "", entries_of, tax,
                  lambda taken, changes, entries: then(Paid(taken[0], taken[1], taken[2], changes), entries),
                  failed)

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
        """Whether this process's view (as of its last answer) has Lambda hold at
        least ``rival_cash``; if so, ask Redis to crawl it (buffered; Redis checks
        again). A view that is behind defers the crawl to a later hand-out."""
        if not super().maybe_crawl_lambda(rival_cash):
            return False
        self.store.write("EVAL", CRAWL_LAMBDA, 1, self._key, repr(float(rival_cash)))
        return True

    # -- the scripts ------------------------------------------------------------------
    def _run(self, take: int | None, credits: list[int], outlinks: int, amount: float | None = None,
             mode: str = "", entries_of: Sequence[int] = (),
             tax: float | None = None) -> tuple[Taken, list[Change], dict[int, Entry]]:
        """:meth:`_pay` at once on the store."""
        result: list[tuple[Taken, list[Change], dict[int, Entry]]] = []
        self._pay(DirectIO(self.store), take, credits, outlinks, amount, mode, entries_of, tax,
                  lambda *found: result.append(found), _raise)
        return result[0]

    def _pay(self, io: Any, take: int | None, credits: list[int], outlinks: int, amount: float | None,
             mode: str, entries_of: Sequence[int] | Callable[[list[Change]], Sequence[int]], tax: float | None,
             then: Callable[[Taken, list[Change], dict[int, Entry]], None],
             failed: Callable[[Exception], None]) -> None:
        """:data:`CASH` through ``io`` after the store's buffered writes: the
        take, the credits' changes and the URL rows of ``entries_of`` to
        ``then``; a function of the changes names the rows to read, in a second
        round trip on a single Redis. On a cluster :data:`CASH` runs per slot (the
        credits sent by the worker thread from the take's answer); the reactor
        thread buffers the :data:`JOIN`."""
        writes = self.store.connection.take_buffered()  # before the CASH, as a store call would send them
        at = len(writes)
        if not self.store.cluster:
            cash = [*writes, self._cash_command(take, credits, outlinks, amount, mode, tax)]

            def settled(answers: list[Any], entries: dict[int, Entry]) -> None:  # on the reactor thread
                try:
                    taken, changes, _, _ = _decode(answers[at])
                    self._update(answers[at][8])
                except Exception as err:  # noqa: BLE001 - the page's pipeline must end
                    failed(err)
                    return
                then(taken, changes, entries)
            if not callable(entries_of):
                reads, rows_of = self.store.urls.entry_reads(entries_of)
                io.submit([*cash, *reads], lambda answers: settled(answers, rows_of(answers[at + 1:])), failed)
                return

            def read(answers: list[Any]) -> tuple[Any, ...]:  # on io's thread: no state touched
                try:
                    reads, rows_of = self.store.urls.entry_reads(entries_of(_decode(answers[at])[1]))
                except Exception as err:  # noqa: BLE001 - reported on the reactor thread, the page's pipeline ends
                    return [], None, lambda _, error=err: failed(error)
                return reads, None, lambda found: settled(answers, rows_of(found)), failed
            io.submit(cash, None, failed, follow=read)
            return
        reads, rows_of = self.store.urls.entry_reads(entries_of if not callable(entries_of) else credits)
        d, view = repr(self.dividend), ("HMGET", self._key, *FIELDS)  # the dividend for the next page
        first = [] if take is None else [self._cash_command(take, [], outlinks, None, "", tax, d), view]
        by_tag = positions_by(credits, tag_of)

        def credit(answers: list[Any]) -> tuple[Any, ...]:  # on the worker thread: no state touched
            try:
                share = (amount if take is None else float(answers[at][3])) or 0.0
                commands = [] if share <= 0 else [  # one CASH per slot crediting the share
                    self._cash_command(None, [credits[p] for p in positions], outlinks, share, mode, d=d)
                    for positions in by_tag.values()]
            except Exception as err:  # noqa: BLE001 - reported on the reactor thread, the page's pipeline ends
                return [], None, lambda _, error=err: failed(error)
            if not commands and take is not None:  # the view came with the take
                return [], None, lambda _: paid(answers, [answers[at + 1]]), failed
            return [*commands, view], None, lambda found: paid(answers, found), failed

        def paid(answers: list[Any], found: list[Any]) -> None:  # on the reactor thread
            try:
                taken, to_lambda, new = (0.0, 0.0, 0, 0.0), 0.0, 0
                if take is not None:
                    self._update(answers[at + 1])
                    taken, _, new, _ = _decode(answers[at])
                    to_lambda = float(answers[at][4])
                self._update(found[-1])
                changes, tag_new, put_in, rounded = _merge_credits(by_tag, found[:-1], len(credits))
                to_lambda += rounded
                entries = rows_of(answers[at + len(first):])
            except Exception as err:  # noqa: BLE001 - the page's pipeline must end
                failed(err)
                return
            self.store.write("EVAL", JOIN, 1, self._key, repr(to_lambda), new + tag_new, d, repr(put_in))
            then(taken, changes, entries)
        io.submit([*writes, *first, *reads], None, failed, follow=credit)

    def _cash_command(self, take: int | None, credits: list[int], outlinks: int, amount: float | None,
                      mode: str, tax: float | None = None, d: str | None = None) -> tuple[Any, ...]:
        """:data:`CASH` over every cash hash it touches and, on a single Redis
        (``d`` None), the ledger; on a cluster in one slot, with the dividend ``d``."""
        keys: list[str] = [self._key] if d is None else []
        index: dict[str, int] = {}

        def key_of(fp: int) -> int:
            key = self.store.keys.cash(tag_of(fp))
            if key not in index:
                keys.append(key)
                index[key] = len(keys)
            return index[key]

        take_index = 0 if take is None else key_of(take)
        pairs = [item for fp in credits for item in (key_of(fp), member(fp))]
        tax = self.tax if tax is None else tax  # a page's own, else the ledger's
        args = ["1" if d is None else "0", d or "0", repr(float(tax)), outlinks, take_index,
                b"" if take is None else member(take), "" if amount is None else repr(float(amount)), mode, *pairs]
        return ("EVAL", CASH, len(keys), *keys, *args)

    # -- reads ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the shared scalars again (this process's view)."""
        self._update(self.store.call(("HMGET", self._key, *FIELDS))[0])


def _raise(err: Exception) -> None:
    raise err


def _merge_credits(by_tag: dict[str, list[int]], answers: list[Any],
                   count: int) -> tuple[list[Change], int, float, float]:
    """The per-slot credit answers as one change per credit, new rows, cash
    put in, and cash to Lambda (what the rows' rounding took)."""
    changes: list[Change] = [(0.0, 0.0, False)] * count
    new, put_in, to_lambda = 0, 0.0, 0.0
    for positions, answer in zip(by_tag.values(), answers):
        _, tag_changes, tag_new, tag_put_in = _decode(answer)
        new, put_in, to_lambda = new + tag_new, put_in + tag_put_in, to_lambda + float(answer[4])
        for p, change in zip(positions, tag_changes):
            changes[p] = change
    return changes, new, put_in, to_lambda


def _decode(answer: list[Any]) -> tuple[Taken, list[Change], int, float]:
    """A :data:`CASH` answer: the take, the credits, new rows, cash put in."""
    cash, history, visits, share, _, new, added, credits = answer[:8]
    changes = [(before, after, bool(existed)) for before, after, existed in _CREDIT.iter_unpack(credits)]
    return (float(cash), float(history), int(visits), float(share)), changes, int(new), float(added)
