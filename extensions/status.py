"""The status of a crawl read from its store opened read-only (``scrapy crawlstatus``)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from extensions.frontier.store import HELD_META, FrontierStore, Status, URLEvent

RECENT_SECONDS = 60.0  # the window of the recent rate


@dataclass(frozen=True)
class CrawlStatus:
    """One snapshot of a crawl (see the module doc for where each part comes from)."""

    location: str
    taken_at: float  # wall time of the snapshot
    closed_cleanly: bool  # False: running, or ended without a clean close
    urls: dict[str, int]  # status name -> URLs, every status
    total: int
    hosts: int  # distinct hosts known
    #: pages per second from the URL rows' fetch times: fetched, first_fetch, last_fetch,
    #: recent_window, recent, pages_per_second_recent, pages_per_second_overall, and the
    #: progress report's pages, elapsed, pages_per_second, finish_reason (None: no report)
    rates: dict[str, Any]
    #: the busiest hosts: host, queued, inflight, done, last_fetch, crawl_delay, next_due
    #: and next_due_known (False: politeness state is in the crawl's memory, not the store)
    busiest: list[dict[str, Any]]
    #: held origins (None: not kept in the store) and deferred ones: origin, reason and
    #: at (a hold's end, a deferral's time)
    held: list[dict[str, Any]] | None
    deferred: list[dict[str, Any]]
    revisits: dict[str, Any]  # records, scheduled, gone, due_now, next_due
    #: failed rows (errors), refused and excluded rows (outcomes): url, status, at, reason
    errors: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[dict[str, Any]] = field(default_factory=list)


def collect(store: FrontierStore, hosts: int = 10, errors: int = 5, report_file: Path | None = None,
            now: float | None = None) -> CrawlStatus:
    """A snapshot of the open ``store`` (only read)."""
    now = time.time() if now is None else now
    counts = store.urls.count_by_status()
    census = store.census.census(hosts, errors, now - RECENT_SECONDS)
    delays = store.hosts.crawl_delays()
    revisits = store.revisits.counts()
    return CrawlStatus(
        location=store.location, taken_at=now, closed_cleanly=store.get_meta("clean") == "1",
        urls={status.name.lower(): counts.get(status, 0) for status in Status},
        total=sum(counts.values()), hosts=store.hosts.host_count(),
        rates=_rates(census.fetched, census.first_fetch, census.last_fetch, census.fetched_since,
                     _report(report_file)),
        busiest=[{**load._asdict(), "crawl_delay": delays.get(load.host), "next_due_known": load.next_due is not None}
                 for load in census.busiest],
        held=_held(store, census.held),
        deferred=_notes(store.hosts.deferrals()),
        revisits={**revisits._asdict(), "due_now": store.revisits.count_due(now),
                  "next_due": store.revisits.next_due()},
        errors=_url_errors(census.errors), refusals=_url_errors(census.refusals),
    )


def _url_errors(events: list[URLEvent]) -> list[dict[str, Any]]:
    return [{"url": event.url, "status": event.status.name.lower(), "at": event.at, "reason": event.reason}
            for event in events]


def _notes(origins: dict[str, tuple[str, float | None]]) -> list[dict[str, Any]]:
    return [{"origin": origin, "reason": reason, "at": at} for origin, (reason, at) in sorted(origins.items())]


def _held(store: FrontierStore, held: dict[str, tuple[str, float]] | None) -> list[dict[str, Any]] | None:
    """Held origins: the shared store's, else the single-process frontier's meta; or None."""
    if held is None:
        try:
            written = json.loads(store.get_meta(HELD_META) or "null")
        except ValueError:
            written = None
        if not isinstance(written, dict):
            return None
        held = {str(origin): (str(reason), None) for origin, reason in written.items()}
    return _notes(held)


def _rates(fetched: int, first: float | None, last: float | None, recent: int,
           report: dict[str, Any] | None) -> dict[str, Any]:
    span = (last - first) if first is not None and last is not None else 0.0
    return {"fetched": fetched, "first_fetch": first, "last_fetch": last, "recent_window": RECENT_SECONDS,
            "recent": recent, "pages_per_second_recent": round(recent / RECENT_SECONDS, 3),
            "pages_per_second_overall": round(fetched / span, 3) if span > 0 else 0.0, "report": report}


def _report(path: Path | None) -> dict[str, Any] | None:
    """The headline of the crawl's progress report, None if there is none (yet)."""
    if path is None:
        return None
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict):
        return None
    return {key: report.get(key) for key in ("pages", "elapsed", "pages_per_second", "finish_reason")}


def as_json(status: CrawlStatus) -> str:
    """The snapshot as JSON (times as unix seconds, None as null)."""
    return json.dumps(asdict(status), indent=1, sort_keys=False)


def when(at: float | None) -> str:
    """A wall time as ``YYYY-MM-DD HH:MM:SS`` UTC, ``-`` if unknown."""
    if at is None:
        return "-"
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def render(status: CrawlStatus) -> str:
    return "\n".join(_header(status) + _hosts(status) + _origins(status) + _revisits(status)
                     + _errors(status) + _refusals(status)) + "\n"


def _header(status: CrawlStatus) -> list[str]:
    rates = status.rates
    state = "closed cleanly" if status.closed_cleanly else "running (or stopped without a clean close)"
    lines = [f"Crawl at {status.location}: {state}; snapshot {when(status.taken_at)} UTC", "",
             f"URLs: {status.total} in {status.hosts} hosts",
             "  " + "  ".join(f"{name} {count}" for name, count in status.urls.items()), "",
             f"Rates: {rates['pages_per_second_recent']:.2f} pages/s in the last {rates['recent_window']:.0f} s, "
             f"{rates['pages_per_second_overall']:.2f} overall ({rates['fetched']} URLs fetched, "
             f"first {when(rates['first_fetch'])}, last {when(rates['last_fetch'])})"]
    if rates["report"] is not None:
        report = rates["report"]
        lines.append(f"  progress report: {report['pages']} pages in {report['elapsed']} s, "
                     f"{report['pages_per_second']} pages/s, finished: {report['finish_reason']}")
    return lines


def _hosts(status: CrawlStatus) -> list[str]:
    lines = ["", f"Busiest hosts ({len(status.busiest)}):",
             f"  {'host':<32} {'queued':>7} {'inflight':>8} {'done':>7}  {'last fetch':<19}  next due"]
    for host in status.busiest:
        if host["next_due_known"]:
            due = when(host["next_due"])
        else:
            delay = "none" if host["crawl_delay"] is None else f"{host['crawl_delay']:g} s"
            due = f"not in the store (Crawl-delay {delay})"
        lines.append(f"  {host['host']:<32} {host['queued']:>7} {host['inflight']:>8} {host['done']:>7}  "
                     f"{when(host['last_fetch']):<19}  {due}")
    if any(not host["next_due_known"] for host in status.busiest):
        lines.append("  (next due times live in the crawl's memory: its Crawl-delay and last fetch are shown)")
    return lines


def _origins(status: CrawlStatus) -> list[str]:
    lines = [""]
    if status.held is None:
        lines.append("Held origins: not kept in the store (a single-process crawl holds them in memory)")
    else:
        lines.append(f"Held origins ({len(status.held)}):")
        lines += [f"  {note['origin']}{'' if note['at'] is None else ' until ' + when(note['at'])}: {note['reason']}"
                  for note in status.held]
    lines.append(f"Deferred origins ({len(status.deferred)}):")
    lines += [f"  {note['origin']} since {when(note['at'])}: {note['reason']}" for note in status.deferred]
    return lines


def _revisits(status: CrawlStatus) -> list[str]:
    revisits = status.revisits
    if not revisits["records"]:
        return ["", "Re-visits: none scheduled"]
    return ["", f"Re-visits: {revisits['records']} URLs, {revisits['scheduled']} scheduled, "
                f"{revisits['due_now']} due now, next {when(revisits['next_due'])}, {revisits['gone']} gone"]


def _errors(status: CrawlStatus) -> list[str]:
    lines = ["", f"Last errors ({len(status.errors)}, failed fetches; the error kinds are in the crawl's stats):"]
    lines += [f"  {when(error['at'])}  {error['status']:<8} {_short(error['url'])}" for error in status.errors]
    return lines


def _refusals(status: CrawlStatus) -> list[str]:
    lines = ["", f"Last refusals ({len(status.refusals)}, outcomes, not errors):"]
    lines += [f"  {when(event['at'])}  {event['status']:<8} {_short(event['url'])}  "
              f"{event['reason'] or ('robots.txt' if event['status'] == 'excluded' else '(reason not kept)')}"
              for event in status.refusals]
    return lines


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
