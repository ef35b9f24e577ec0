"""Build the compressed link graph from the outlinks a crawl recorded (``store.links``) into
one directory: ``graph.*``, ``graph-t.*``, the URL and fingerprint tables and ``build.json``
(:class:`BuildReport`, written last). Targets without a URL are left out and counted."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from extensions.linkgraph.bvgraph import Adjacency, transpose, write_bvgraph
from extensions.linkgraph.pagerank import pagerank, spearman

GRAPH, TRANSPOSED = "graph", "graph-t"
URLS, URL_OFFSETS = "urls.txt", "urls.offsets.npy"
FINGERPRINTS, FINGERPRINT_IDS = "fingerprints.npy", "fingerprint_ids.npy"
PAGERANK = "pagerank.npy"
REPORT = "build.json"
LOOKUP_BATCH = 500  # URL rows per get_many (SQLite's host parameter limit is far above)

_NUMBER = re.compile(r"\d+")


def order_key(url: str) -> tuple[str, int, str, str]:
    """The sort key that gives close URLs close node ids (WebGraph's locality)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or 0
    except ValueError:
        return ("\uffff", 0, url, "")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    # each run of digits prefixed by its length: numbers sort as numbers (9 -> 019, 10 -> 0210)
    numbered = _NUMBER.sub(lambda match: f"{len(match.group()):02d}{match.group()}", path)
    return (".".join(reversed(host.split("."))), port, numbered, parts.scheme)


def node_order(urls: Sequence[str]) -> np.ndarray:
    """``order[i]``: the position of ``urls[order[i]]`` is node id ``i``."""
    return np.array(sorted(range(len(urls)), key=lambda i: order_key(urls[i])), dtype=np.int64)


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What a build made (``build.json``)."""

    nodes: int
    arcs: int
    bits_per_link: float  # the out-link graph's bit stream over its arcs
    bits_per_link_transposed: float
    graph_bytes: int  # .graph + .offsets of both graphs
    uncompressed_bytes: int  # the same lists as 32-bit integers, both graphs
    build_seconds: float
    pages: int  # recorded pages the build read (a later build with more is newer)
    unresolved_targets: int  # edges left out: their target has no URL
    source: str  # the store it was built from
    pagerank_iterations: int
    aopic_spearman: float | None  # rank correlation of AOPIC history and PageRank
    aopic_pages: int  # fetched pages with an AOPIC history it was computed over


def read_lists(store: Any, batch: int = 10_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every recorded list as arrays: sources, outlink counts, outlinks concatenated."""
    pages: list[int] = []
    counts: list[int] = []
    chunks: list[np.ndarray] = []
    for rows in store.links.scan(batch):
        for source, targets in rows:
            pages.append(source)
            counts.append(len(targets))
            chunks.append(np.asarray(targets, dtype=np.int64))
    flat = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    return np.array(pages, dtype=np.int64), np.array(counts, dtype=np.int64), flat


def _batched(read: Callable[[list[int]], dict[int, Any]], keys: list[int]) -> dict[int, Any]:
    """``read``'s answers for ``keys``, asked :data:`LOOKUP_BATCH` keys at a time."""
    found: dict[int, Any] = {}
    for start in range(0, len(keys), LOOKUP_BATCH):
        found.update(read(keys[start:start + LOOKUP_BATCH]))
    return found


def build_link_graph(store: Any, directory: Path, *, batch: int = 10_000,
                     clock: Callable[[], float] = time.monotonic) -> BuildReport:
    """Build the graph of every list recorded in ``store`` into ``directory`` (replaced whole)."""
    started = clock()
    pages, counts, flat = read_lists(store, batch)
    known = np.unique(np.concatenate([pages, flat]))
    urls = store.links.node_urls()  # the link table's names if it keeps them
    if urls is None:  # named by the URL database's rows
        urls = {fp: entry.url for fp, entry in _batched(store.urls.get_many, known.tolist()).items()}
    named = np.array([fp for fp in known.tolist() if fp in urls], dtype=np.int64)  # sorted, as known is
    order = node_order([urls[fp] for fp in named.tolist()])
    node_of_named = np.empty(len(named), dtype=np.int64)
    node_of_named[order] = np.arange(len(named), dtype=np.int64)
    sources = np.repeat(pages, counts)
    source_ids, source_ok = _ids(named, node_of_named, sources)
    target_ids, target_ok = _ids(named, node_of_named, flat)
    keep = source_ok & target_ok
    graph = Adjacency.from_arcs(len(named), source_ids[keep], target_ids[keep])
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(str(directory) + ".building")
    staging.mkdir(parents=True, exist_ok=True)
    size = write_bvgraph(staging / GRAPH, graph)
    size_t = write_bvgraph(staging / TRANSPOSED, transpose(graph))
    _write_urls(staging, [urls[fp] for fp in named[order].tolist()])
    np.save(staging / FINGERPRINTS, named)
    np.save(staging / FINGERPRINT_IDS, node_of_named)
    ranked = pagerank(graph.offsets, graph.targets)
    np.save(staging / PAGERANK, ranked.scores)
    rho, compared = _aopic_spearman(store, pages, *_ids(named, node_of_named, pages), ranked.scores)
    arcs = graph.num_arcs
    report = BuildReport(
        nodes=graph.num_nodes, arcs=arcs,
        bits_per_link=size.graph_bits / arcs if arcs else 0.0,
        bits_per_link_transposed=size_t.graph_bits / arcs if arcs else 0.0,
        graph_bytes=(size.graph_bits + size_t.graph_bits + 7) // 8 + size.offsets_bytes + size_t.offsets_bytes,
        uncompressed_bytes=2 * 4 * (arcs + graph.num_nodes + 1),
        build_seconds=round(clock() - started, 3), pages=len(pages),
        unresolved_targets=int((~target_ok).sum()), source=str(getattr(store, "location", "")),
        pagerank_iterations=ranked.iterations, aopic_spearman=rho, aopic_pages=compared,
    )
    (staging / REPORT).write_text(json.dumps(asdict(report), indent=1) + "\n")
    _replace(staging, directory)
    return report


def _ids(named: np.ndarray, node_of_named: np.ndarray, fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Node ids of ``fingerprints`` (0 where unknown) and which are known."""
    if not len(named):
        return np.zeros(len(fingerprints), dtype=np.int64), np.zeros(len(fingerprints), dtype=bool)
    at = np.minimum(np.searchsorted(named, fingerprints), len(named) - 1)
    ok = named[at] == fingerprints
    return np.where(ok, node_of_named[at], 0), ok


def _aopic_spearman(store: Any, pages: np.ndarray, nodes: np.ndarray, resolved: np.ndarray,
                    scores: np.ndarray) -> tuple[float | None, int]:
    """Spearman's rho between AOPIC history and PageRank; None without AOPIC rows."""
    fingerprints = pages.tolist()
    history = {fp: row[1] for fp, row in _batched(store.cash.get_cash, fingerprints).items()}
    keep = [i for i, fp in enumerate(fingerprints) if resolved[i] and fp in history]
    if len(keep) < 2:
        return None, len(keep)
    rho = spearman(np.array([history[fingerprints[i]] for i in keep]), scores[nodes[keep]])
    return (None if np.isnan(rho) else round(rho, 4)), len(keep)


def _write_urls(directory: Path, urls: Iterable[str]) -> None:
    """One URL per line (a URL cannot hold a raw newline), and line starts."""
    encoded = [url.encode("utf-8") for url in urls]
    starts = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(line) + 1 for line in encoded], out=starts[1:])
    (directory / URLS).write_bytes(b"".join(line + b"\n" for line in encoded))
    np.save(directory / URL_OFFSETS, starts)


def _replace(staging: Path, directory: Path) -> None:
    """Move every built file into ``directory``, the report last (no report: no build)."""
    (directory / REPORT).unlink(missing_ok=True)
    for path in staging.iterdir():
        if path.name != REPORT:
            path.replace(directory / path.name)
    (staging / REPORT).replace(directory / REPORT)
    staging.rmdir()


def read_report(directory: Path) -> BuildReport | None:
    """The report of the build in ``directory``, or None if there is none."""
    try:
        return BuildReport(**json.loads((directory / REPORT).read_text()))
    except (OSError, ValueError, TypeError):
        return None
