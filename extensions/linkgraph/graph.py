"""The connectivity server's queries over a built link graph: a URL's
out-links and in-links, each by decoding one list with webgraph-rs; a URL
is found by its canonical fingerprint, so any spelling of it finds its node."""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import webgraph

from extensions.frontier.fingerprint import url_fingerprint
from extensions.linkgraph.build import (
    FINGERPRINT_IDS,
    FINGERPRINTS,
    GRAPH,
    PAGERANK,
    TRANSPOSED,
    URL_OFFSETS,
    URLS,
    read_report,
)


class UnknownURL(KeyError):
    """The URL is not a node of the graph."""

    def __str__(self) -> str:
        return f"not in the link graph: {self.args[0]}"


class LinkGraph:
    """A built graph, its transpose and its URLs, opened read-only."""

    def __init__(self, directory: Path) -> None:
        report = read_report(directory)
        if report is None:
            raise FileNotFoundError(f"no link graph built in {directory}")
        self.directory, self.report = directory, report
        self.graph = webgraph.BvGraph(str(directory / GRAPH))
        self.transposed = webgraph.BvGraph(str(directory / TRANSPOSED))
        self.fingerprints = np.load(directory / FINGERPRINTS)
        self.fingerprint_ids = np.load(directory / FINGERPRINT_IDS)
        self.url_starts = np.load(directory / URL_OFFSETS)
        with open(directory / URLS, "rb") as file:
            self._urls = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self.graph.num_nodes() else b""

    def node_of(self, url: str) -> int:
        """The node id of ``url``; :class:`UnknownURL` if it is not in the graph."""
        try:
            fingerprint, _ = url_fingerprint(url)
        except ValueError as err:
            raise UnknownURL(url) from err
        at = int(np.searchsorted(self.fingerprints, fingerprint))
        if at >= len(self.fingerprints) or int(self.fingerprints[at]) != fingerprint:
            raise UnknownURL(url)
        return int(self.fingerprint_ids[at])

    def url_of(self, node: int) -> str:
        start, end = int(self.url_starts[node]), int(self.url_starts[node + 1]) - 1
        return self._urls[start:end].decode("utf-8")

    def out_links(self, url: str) -> list[str]:
        """The URLs ``url`` links to, in node order."""
        return list(map(self.url_of, self.graph.successors(self.node_of(url))))

    def in_links(self, url: str) -> list[str]:
        """The URLs that link to ``url``, in node order."""
        return list(map(self.url_of, self.transposed.successors(self.node_of(url))))

    def pagerank(self) -> np.ndarray:
        """PageRank by node id (damping 0.85), computed at build time."""
        return np.load(self.directory / PAGERANK)

    def edges(self) -> Iterator[tuple[str, str]]:
        """Every ``(source URL, target URL)``, in node order."""
        for node in range(self.graph.num_nodes()):
            for target in self.graph.successors(node):
                yield self.url_of(node), self.url_of(target)

    def close(self) -> None:
        if isinstance(self._urls, mmap.mmap):
            self._urls.close()

