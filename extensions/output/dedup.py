"""Which record a download becomes (pure): ``IDENTICAL`` (payload archived
before and longer than a revisit's :func:`revisit_overhead`),
``NOT_MODIFIED`` (a 304 for a URL the archive holds) or ``RESPONSE``."""

from __future__ import annotations

import enum
from dataclasses import dataclass

NOT_MODIFIED_STATUS = 304
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True, slots=True)
class Capture:
    """One archived record: what a revisit refers to."""

    uri: str
    date: str
    record_id: str | None
    digest: str


class RecordKind(enum.Enum):
    """A record kind; its value is a revisit's ``WARC-Profile`` ("": a response)."""

    RESPONSE = ""
    IDENTICAL = PROFILE_IDENTICAL
    NOT_MODIFIED = PROFILE_NOT_MODIFIED


def revisit_fields(kind: RecordKind, original: Capture) -> dict[str, str]:
    """The header fields of a revisit of ``kind`` referring to ``original``."""
    fields = {
        "WARC-Profile": kind.value,
        "WARC-Refers-To-Target-URI": original.uri,
        "WARC-Refers-To-Date": original.date,
        "WARC-Payload-Digest": original.digest,
    }
    if original.record_id is not None:
        fields["WARC-Refers-To"] = original.record_id
    return fields


def revisit_overhead(kind: RecordKind, original: Capture) -> int:
    """Bytes of the header fields a revisit of ``kind`` adds to a record (a response has a digest too)."""
    return sum(len(name) + 2 + len(value.encode("utf-8")) + 2
               for name, value in revisit_fields(kind, original).items() if name != "WARC-Payload-Digest")


def record_kind(status: int, payload_length: int, same_payload: Capture | None,
                same_uri: Capture | None) -> tuple[RecordKind, Capture | None]:
    """The kind of record for a download and the capture it refers to."""
    if status == NOT_MODIFIED_STATUS:
        if same_uri is not None:
            return RecordKind.NOT_MODIFIED, same_uri
        return RecordKind.RESPONSE, None
    if same_payload is not None and payload_length > revisit_overhead(RecordKind.IDENTICAL, same_payload):
        return RecordKind.IDENTICAL, same_payload
    return RecordKind.RESPONSE, None


def lookups_needed(status: int, payload_length: int) -> tuple[bool, bool]:
    """Whether a download needs the digest look-up and the URI look-up."""
    if status == NOT_MODIFIED_STATUS:
        return False, True
    return payload_length > 0, False
