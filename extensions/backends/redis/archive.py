"""The WARC archive index in Redis, shared by every process of a crawl.

Implements :class:`extensions.output.archive.ArchiveIndex` for
``FRONTIER_BACKEND = "redis"``: processes sharing a prefix write revisit
records for payloads another process archived, and a later crawl of the same
prefix refers to the records of the earlier one (while its keys are kept:
``SCHEDULER_PERSIST``). Key layout (``P`` is ``FRONTIER_REDIS_PREFIX``)::

    P:{archive-DD}:digests  hash  payload digest ("sha1:BASE32") -> the first
                            record holding it: "date TAB record-id TAB uri"
    P:{T}:captures          hash  URI -> its latest capture:
                            "digest TAB date TAB record-id"

``DD`` is the digest's first two base-32 characters (1,024 partitions; Redis
Cluster hash tags, so a cluster spreads them over its masters), ``T`` the
host tag of the URI's host (:func:`extensions.backends.redis.keys.host_tag`:
the slot of the host's other rows). Both match the crawl's ``P:{*}:*``
pattern, so they are kept and deleted with the frontier's keys
(``SCHEDULER_PERSIST``, ``SCHEDULER_FLUSH_ON_START``).

Round trips: a look-up is one pipeline on the crawler's one connection
(:func:`extensions.backends.redis.factory.redis_connection`), on the reactor
thread (the record is written in ``response_downloaded``, which cannot
wait); the additions are buffered and ride on the next look-up. The first
writer of a digest stays (``HSETNX``). Errors after the connection's
retries raise :class:`~extensions.output.archive.ArchiveIndexError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from extensions.output.archive import ArchiveIndexError
from extensions.output.dedup import Capture
from extensions.backends.redis.connection import RedisConnection, RedisLayerError
from extensions.backends.redis.keys import Keys, host_tag

if TYPE_CHECKING:
    pass

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


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


class RedisArchiveIndex:
    """The archive index on one Redis prefix (see the module docstring)."""

    def __init__(self, connection: RedisConnection, prefix: str) -> None:
        self.connection = connection
        self.keys = ArchiveKeys(prefix)
        connection.attach("the WARC archive index", ArchiveIndexError)
        self.attached = True

    def find(self, digest: str | None, uri: str | None) -> tuple[Capture | None, Capture | None]:
        commands = []
        if digest is not None:
            commands.append(("HGET", self.keys.digests(digest), digest))
        if uri is not None:
            commands.append(("HGET", self.keys.captures(uri), uri))
        if not commands:
            return None, None
        try:
            answers = list(self.connection.call(*commands))
        except RedisLayerError as err:
            raise ArchiveIndexError(f"WARC archive index: {err}") from err
        same_payload = same_uri = None
        if digest is not None:
            found = _text(answers.pop(0))
            if found is not None:
                date, record_id, original_uri = found.split(_SEPARATOR, 2)
                same_payload = Capture(original_uri, date, record_id or None, digest)
        if uri is not None:
            found = _text(answers.pop(0))
            if found is not None:
                stored_digest, date, record_id = found.split(_SEPARATOR, 2)
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
