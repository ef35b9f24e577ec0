"""CDXJ index lines as pywb reads them (``SURT-key timestamp {json}``, sorted,
a ``.cdxj`` beside each WARC): ``url``, ``mime``, ``status``, ``digest``,
``length``, ``offset``, ``filename`` of ``response`` and ``revisit``
records, 304 answers left out."""

from __future__ import annotations

import heapq
import json
import os
import re
from contextlib import ExitStack
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

INDEXED_TYPES = ("response", "revisit")
SUFFIX = ".cdxj"
WARC_SUFFIX = ".warc.gz"
_MIME_END = re.compile("[; ]")


def index_path(warc_path: Path) -> Path:
    """``name.cdxj`` next to ``name.warc.gz`` (``.open`` suffix ignored)."""
    name = warc_path.name.removesuffix(".open").removesuffix(WARC_SUFFIX)
    return warc_path.with_name(name + SUFFIX)


def index_line(record: Any, offset: int, length: int, filename: str) -> bytes | None:
    """The CDXJ line of ``record`` at ``offset`` in ``filename``; None if not indexed."""
    import surt  # noqa: PLC0415 - only crawls that index pay for its import

    if record.rec_type not in INDEXED_TYPES:
        return None
    http = record.http_headers
    status = http.get_statuscode() if http is not None else None
    if status == "304":
        return None
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI")
    fields: dict[str, str] = {"url": url}
    if record.rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        content_type = http.get_header("Content-Type") if http is not None else None
        fields["mime"] = _MIME_END.split(content_type, 1)[0] if content_type else "unk"
        if status:
            fields["status"] = status
    digest = headers.get_header("WARC-Payload-Digest") or ""
    if digest:
        fields["digest"] = digest.removeprefix("sha1:")
    fields.update(length=str(length), offset=str(offset), filename=filename)
    timestamp = iso_date_to_timestamp(headers.get_header("WARC-Date"))
    return f"{surt.surt(url)} {timestamp} {json.dumps(fields)}\n".encode()


def index_warc(path: Path, filename: str | None = None) -> list[bytes]:
    """Every index line of the WARC file at ``path`` (in file order)."""
    lines = []
    name = filename or path.name.removesuffix(".open")
    with open(path, "rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            line = index_line(record, records.get_record_offset(), records.get_record_length(), name)
            if line is not None:
                lines.append(line)
    return lines


def write_index(path: Path, lines: Iterable[bytes]) -> Path:
    """``lines`` sorted bytewise into ``path``, replaced atomically."""
    partial = path.with_name(path.name + ".tmp")
    with open(partial, "wb") as out:
        out.writelines(sorted(lines))
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
    return path


def merged(paths: Iterable[Path]) -> Iterator[bytes]:
    """The lines of several sorted index files, in one sorted order."""
    with ExitStack() as files:
        yield from heapq.merge(*(files.enter_context(open(path, "rb")) for path in paths))
