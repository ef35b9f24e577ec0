"""The report's files, written atomically: an offline ``index.html`` and PNG
plots (matplotlib's Agg canvas, safe in a worker thread)."""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extensions.progress import write_atomically
from extensions.report.series import StatsSeries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: plot size in inches at DPI: small images render fast
PLOT_SIZE = (5.6, 2.6)
DPI = 80
#: rows of the hosts and MIME tables, bars of the hosts plot
TOP_ROWS = 20
TOP_BARS = 12


@dataclass
class Snapshot:
    """Everything one refresh of the report shows (plain, picklable values)."""

    spider: str
    state: str  # "running" or "finished (<reason>)"
    generated: str  # ISO time of this refresh
    elapsed: float  # seconds since the crawl opened
    summary: dict[str, Any]  # label -> value, in display order
    hosts: list[tuple[str, int, int]]  # (host, pages, bytes), busiest first
    hosts_other: int  # pages of hosts pruned from the bounded tally
    mime_types: list[tuple[str, int]]
    status_codes: list[tuple[str, int]]  # (code, responses), by code
    frontier_status: list[tuple[str, int]]
    frontier_levels: list[tuple[str, int]]  # empty: the frontier reports none
    frontier_urls: list[tuple[str, int]]  # URLs in the store by status; empty: not counted
    depths: list[tuple[int, int]]  # (depth, pages), by depth
    series: StatsSeries
    samples_taken: int
    stats: dict[str, str] = field(default_factory=dict)  # every stat, as text


def write_report(directory: Path, snapshot: Snapshot) -> list[Path]:
    """Write the plots, then ``index.html`` (it links them); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    plots = {
        "rates.png": plot_rates(snapshot.series),
        "frontier.png": plot_frontier(snapshot.series),
        "status.png": plot_bars([code for code, _ in snapshot.status_codes],
                                [n for _, n in snapshot.status_codes], "responses by status code", "responses"),
        "depth.png": plot_bars([str(depth) for depth, _ in snapshot.depths],
                               [n for _, n in snapshot.depths], "pages by depth", "pages"),
        "hosts.png": plot_hosts(snapshot.hosts[:TOP_BARS]),
    }
    written = []
    for name, png in plots.items():
        written.append(write_atomically(directory / name, png))
    written.append(write_atomically(directory / "index.html", page(snapshot, list(plots)).encode()))
    return written


# -- plots ---------------------------------------------------------------------

def _figure(rows: int = 1, height: float = PLOT_SIZE[1]) -> tuple[Figure, Any]:
    # imported on the first drawing: matplotlib is costly to import when REPORT_DIR is unset
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(PLOT_SIZE[0], height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _no_data(figure: Figure, axes: Sequence[Any], titles: Sequence[str]) -> bytes:
    for one, title in zip(axes, titles):
        one.set_title(title, fontsize=10)
        one.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=one.transAxes, color="grey")
        one.set_xticks([])
        one.set_yticks([])
    return _png(figure)


def _style(axes: Any, title: str | None, xlabel: str | None, ylabel: str | None, grid: str = "both") -> None:
    if title:
        axes.set_title(title, fontsize=10)
    if xlabel:
        axes.set_xlabel(xlabel, fontsize=9)
    if ylabel:
        axes.set_ylabel(ylabel, fontsize=9)
    axes.tick_params(labelsize=8)
    axes.grid(axis=grid, alpha=0.3)


def plot_rates(series: StatsSeries) -> bytes:
    """Pages/s and bytes/s between samples, over the crawl's time."""
    figure, (pages_axes, bytes_axes) = _figure(rows=2, height=PLOT_SIZE[1] * 1.4)
    times, pages = series.rates("pages")
    _, received = series.rates("bytes")
    if not times:
        return _no_data(figure, (pages_axes, bytes_axes), ("pages/s", "bytes/s"))
    pages_axes.plot(times, pages, color="tab:blue", drawstyle="steps-mid")
    bytes_axes.plot(times, [value / 1024 for value in received], color="tab:green", drawstyle="steps-mid")
    _style(pages_axes, "fetch rate", None, "pages/s")
    _style(bytes_axes, None, "seconds since start", "KiB/s")
    for axes in (pages_axes, bytes_axes):
        axes.set_ylim(bottom=0)
    return _png(figure)


def plot_frontier(series: StatsSeries) -> bytes:
    """URLs queued and in flight, and URLs done, over the crawl's time."""
    figure, (axes,) = _figure()
    if len(series) < 2:
        return _no_data(figure, (axes,), ("frontier size",))
    times = series.times()
    axes.plot(times, series.values("frontier/queued"), label="queued", color="tab:orange")
    axes.plot(times, series.values("frontier/inflight"), label="in flight", color="tab:red")
    axes.plot(times, series.values("frontier/done"), label="done", color="tab:blue", alpha=0.6)
    _style(axes, "frontier size", "seconds since start", "URLs")
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8, loc="upper left")
    return _png(figure)


def plot_bars(labels: Sequence[str], values: Sequence[int], title: str, unit: str) -> bytes:
    """A vertical bar chart (status mix, depth distribution)."""
    figure, (axes,) = _figure()
    if not values:
        return _no_data(figure, (axes,), (title,))
    axes.bar(range(len(values)), values, color="tab:blue")
    axes.set_xticks(range(len(labels)), labels, fontsize=8, rotation=0 if len(labels) < 16 else 90)
    _style(axes, title, None, unit, grid="y")
    return _png(figure)


def plot_hosts(hosts: Sequence[tuple[str, int, int]]) -> bytes:
    """Horizontal bars: pages fetched from the busiest hosts."""
    figure, (axes,) = _figure(height=max(PLOT_SIZE[1], 0.9 + 0.22 * len(hosts)))
    if not hosts:
        return _no_data(figure, (axes,), ("busiest hosts",))
    names = [host for host, _, _ in hosts][::-1]
    axes.barh(range(len(hosts)), [pages for _, pages, _ in hosts][::-1], color="tab:purple")
    axes.set_yticks(range(len(names)), names, fontsize=8)
    _style(axes, "busiest hosts", "pages fetched", None, grid="x")
    return _png(figure)


# -- the page ------------------------------------------------------------------

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.meta { color: #555; margin-top: 0; }
.grid { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
img { border: 1px solid #ddd; } details { margin-top: 1.5em; }
.note { color: #777; font-size: 0.9em; }
"""


def page(snapshot: Snapshot, images: Sequence[str]) -> str:
    """The HTML of ``index.html``."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>crawl report: {esc(snapshot.spider)}</title>",
        f'<meta name="report-samples" content="{snapshot.samples_taken}">',
        f'<meta name="report-state" content="{esc(snapshot.state)}">',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Crawl report: {esc(snapshot.spider)}</h1>",
        f'<p class="meta">{esc(snapshot.state)}, {snapshot.elapsed:.0f} s since start; '
        f"updated {esc(snapshot.generated)}; {snapshot.samples_taken} samples "
        f"({len(snapshot.series)} kept)</p>",
        '<h2>Summary, rates and frontier size</h2><div class="grid">',
        table(["", ""], [(label, value) for label, value in snapshot.summary.items()]),
        _image("rates.png", "pages/s and bytes/s over time", images),
        _image("frontier.png", "frontier size over time", images),
        "</div>",
        '<h2>Hosts</h2><div class="grid">',
        table(["host", "pages", "bytes"], snapshot.hosts[:TOP_ROWS]),
        _image("hosts.png", "busiest hosts", images),
        "</div>",
    ]
    if snapshot.hosts_other:
        parts.append(f'<p class="note">{snapshot.hosts_other} pages of less busy hosts not listed '
                     "(the host tally is bounded)</p>")
    parts += [
        '<h2>Responses and documents</h2><div class="grid">',
        table(["status", "responses"], snapshot.status_codes),
        _image("status.png", "status mix", images),
        table(["MIME type", "documents"], snapshot.mime_types[:TOP_ROWS]),
        "</div>",
        '<h2>Frontier and depth</h2><div class="grid">',
        table(["frontier", "URLs"], snapshot.frontier_status),
        table(["URL database", "URLs"], snapshot.frontier_urls) if snapshot.frontier_urls else "",
        table(["front-queue level", "URLs"], snapshot.frontier_levels) if snapshot.frontier_levels
        else '<p class="note">The frontier reports<br>no counts by<br>front-queue level.</p>',
        table(["depth", "pages"], snapshot.depths),
        _image("depth.png", "depth distribution", images),
        "</div>",
        "<details><summary>All stats</summary>",
        table(["stat", "value"], sorted(snapshot.stats.items())),
        "</details></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _image(name: str, alt: str, images: Sequence[str]) -> str:
    assert name in images, name
    return f'<img src="{html.escape(name)}" alt="{html.escape(alt)}">'


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An HTML table; numbers right-aligned, every cell escaped."""
    out = ["<table>"]
    if any(header):
        out.append("<tr>" + "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(_cell(cell) for cell in row) + "</tr>")
    if not rows:
        out.append(f'<tr><td colspan="{len(header)}" class="note">none yet</td></tr>')
    out.append("</table>")
    return "".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"<td>{html.escape(str(value))}</td>"
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"
    return f'<td class="n">{text}</td>'
