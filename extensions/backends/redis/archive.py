"""The WARC archive index in Redis, shared by every process of a crawl
(:class:`extensions.output.archive.ArchiveIndex`; keys: docs/reference/redis-layout.md)."""

from __future__ import annotations

from urllib.parse import urlsplit

from extensions.output.archive import ArchiveIndexError
from extensions.output.dedup import Capture
from extensions.backends.redis.connection import RedisConnection, RedisLayerError
from extensions.backends.redis.keys import Keys, host_tag

_SEPARATOR = "\t"


class ArchiveKeys:
    """The archive index's key names for one prefix."""

    def __init__(self, prefix: str) -> None:
        Keys(prefix)  # the frontier's check of the prefix
        self.prefix = prefix

    def digests(self, digest: str) -> str:
        partition = digest.split(":", 1)[-1][:2].upper()
        return f"{self.prefix}:{{archive-{partition}}}:digests"

    def captures(self, uri: str) -> str:
        host = (urlsplit(uri).hostname or "").lower()
        return f"{self.prefix}:{{{host_tag(host)}}}:captures"


class RedisArchiveIndex:
    """The archive index on one Redis prefix."""

    def __init__(self, connection: RedisConnection, prefix: str) -> None:
        self.connection = connection
        self.keys = ArchiveKeys(prefix)
        connection.attach("the WARC archive index", ArchiveIndexError)
        self.attached = True

    def find(self, digest: str | None, uri: str | None) -> tuple[Capture | None, Capture | None]:
        asked = [(self.keys.digests(digest), digest)] if digest is not None else []
        asked += [(self.keys.captures(uri), uri)] if uri is not None else []
        if not asked:
            return None, None
        try:
            answers = [None if value is None else value.decode("utf-8", "surrogatepass")
                       for value in self.connection.call(*[("HGET", key, name) for key, name in asked])]
        except RedisLayerError as err:
            raise ArchiveIndexError(f"WARC archive index: {err}") from err
        payload = answers.pop(0) if digest is not None else None
        latest = answers.pop(0) if uri is not None else None
        same_payload = same_uri = None
        if payload is not None:
            date, record_id, original_uri = payload.split(_SEPARATOR, 2)
            same_payload = Capture(original_uri, date, record_id or None, digest)
        if latest is not None:
            stored_digest, date, record_id = latest.split(_SEPARATOR, 2)
            same_uri = Capture(uri, date, record_id or None, stored_digest)
        return same_payload, same_uri

    def add(self, capture: Capture, original: bool, latest: bool) -> None:
        record_id = capture.record_id or ""
        try:
            if original:
                self.connection.write("HSETNX", self.keys.digests(capture.digest), capture.digest,
                                      _SEPARATOR.join((capture.date, record_id, capture.uri)))
            if latest:
                self.connection.write("HSET", self.keys.captures(capture.uri), capture.uri,
                                      _SEPARATOR.join((capture.digest, capture.date, record_id)))
        except RedisLayerError as err:
            raise ArchiveIndexError(f"WARC archive index: {err}") from err

    def close(self) -> None:
        if not self.attached:
            return
        self.attached = False
        try:
            self.connection.detach()  # the last user sends the buffered additions
        except RedisLayerError as err:
            raise ArchiveIndexError(f"WARC archive index: {err}") from err
