"""The recorded link graph of the memory store: lists in a dict."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


class MemoryLinkTable:
    """The link table of :class:`~extensions.backends.memory.store.MemoryStore`."""

    def __init__(self) -> None:
        self._lists: dict[int, list[int]] = {}

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        self._lists[source] = list(dict.fromkeys(targets))

    def targets_of(self, source: int) -> list[int] | None:
        found = self._lists.get(source)
        return None if found is None else list(found)

    def sources(self) -> int:
        return len(self._lists)

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        items = [(source, list(targets)) for source, targets in self._lists.items()]
        for start in range(0, len(items), max(1, batch)):
            yield items[start:start + batch]

    def node_urls(self) -> None:
        """None: the graph's nodes are named through the store's URL rows."""
