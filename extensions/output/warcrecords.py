"""WARC 1.1 records of a fetch, built with warcio: ``response``, ``revisit``,
``request``, ``metadata`` (Heritrix's fields) and ``warcinfo``."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from http.client import responses as REASONS
from io import BytesIO
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date

from extensions.output.dedup import Capture, RecordKind, revisit_fields

if TYPE_CHECKING:
    from scrapy.http import Request, Response

WARC_VERSION = "WARC/1.1"
FIELDS_TYPE = "application/warc-fields"
#: Heritrix's hop type of a navigation link and its context when the element
#: is not known (``HTMLLinkContext.NAVLINK_MISC``).
OUTLINK_HOP, OUTLINK_CONTEXT = "L", "=NAVLINK_MISC"

#: Headers that describe a transfer our body no longer has: Twisted already
#: de-chunked it, so a replayer must not de-chunk again.
_RENAMED_HEADERS = {b"transfer-encoding": "X-Crawler-Transfer-Encoding"}

builder = RecordBuilder(warc_version=WARC_VERSION)


def warc_date(moment: float) -> str:
    """``WARC-Date`` of a POSIX time (WARC 1.1: microseconds)."""
    when = datetime.fromtimestamp(moment, UTC).replace(tzinfo=None)
    return datetime_to_iso_date(when, use_micros=True)


def payload_digest(body: bytes) -> str:
    """``WARC-Payload-Digest`` of ``body``: ``sha1:`` and base 32."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")  # noqa: S324 - WARC's digest


def http_request_headers(request: Request) -> StatusAndHeaders:
    """The request line and headers as the HTTP/1.1 client sent them."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [(k.decode("latin-1"), v.decode("latin-1"))
               for k, values in request.headers.items() for v in values]
    if not any(name.lower() == "host" for name, _ in headers):
        headers.insert(0, ("Host", parts.netloc))
    return StatusAndHeaders(f"{request.method} {target} HTTP/1.1", headers, is_http_request=True)


def http_response_headers(response: Response) -> StatusAndHeaders:
    """The status line and headers as received (transfer coding renamed)."""
    protocol = response.protocol or ""
    protocol = protocol if protocol.startswith("HTTP/") else "HTTP/1.1"
    headers = []
    for name, values in response.headers.items():
        text_name = _RENAMED_HEADERS.get(name.lower(), name.decode("latin-1"))
        headers += [(text_name, v.decode("latin-1")) for v in values]
    status = f"{response.status} {REASONS.get(response.status, 'Unknown')}"
    return StatusAndHeaders(status, headers, protocol=protocol)


def _common(date: str, response: Response) -> dict[str, str]:
    common = {"WARC-Date": date}
    if response.ip_address is not None:
        common["WARC-IP-Address"] = str(response.ip_address)
    return common


def record_id(record: Any) -> str:
    return record.rec_headers.get_header("WARC-Record-ID")


def response_record(response: Response, date: str, digest: str) -> Any:
    """The response as received, its body as the payload."""
    body = response.body
    headers = {**_common(date, response), "WARC-Payload-Digest": digest}
    return builder.create_warc_record(response.url, "response", payload=BytesIO(body), length=len(body),
                                      warc_headers_dict=headers, http_headers=http_response_headers(response))


def revisit_record(response: Response, date: str, kind: RecordKind, original: Capture) -> Any:
    """A revisit of ``kind`` referring to ``original``: HTTP headers, no payload."""
    headers = {**_common(date, response), **revisit_fields(kind, original)}
    return builder.create_warc_record(response.url, "revisit", warc_headers_dict=headers,
                                      http_headers=http_response_headers(response))


def request_record(request: Request, response: Response, date: str, concurrent_to: str) -> Any:
    """The request as sent (to ``response``'s address), concurrent to the record of its answer."""
    body = request.body or b""
    headers = {**_common(date, response), "WARC-Concurrent-To": concurrent_to}
    return builder.create_warc_record(request.url, "request", payload=BytesIO(body), length=len(body),
                                      warc_headers_dict=headers, http_headers=http_request_headers(request))


def fields_payload(fields: list[tuple[str, str]]) -> bytes:
    """``application/warc-fields`` lines (a name may repeat; empty values left out)."""
    return b"".join(f"{name}: {value}\r\n".encode() for name, value in fields if value)


def outlink_fields(links: list[str], via: str | None, depth: int) -> list[tuple[str, str]]:
    """A page's metadata fields as Heritrix writes them."""
    fields = [("via", via or ""), ("hopsFromSeed", OUTLINK_HOP * depth)]
    return fields + [("outlink", f"{link} {OUTLINK_HOP} {OUTLINK_CONTEXT}") for link in links]


def metadata_record(uri: str, date: str, fields: list[tuple[str, str]], concurrent_to: str | None) -> Any:
    """A metadata record about ``uri`` (concurrent to its response, if known)."""
    payload = fields_payload(fields)
    headers = {"WARC-Date": date, "Content-Type": FIELDS_TYPE}
    if concurrent_to is not None:
        headers["WARC-Concurrent-To"] = concurrent_to
    return builder.create_warc_record(uri, "metadata", payload=BytesIO(payload), length=len(payload),
                                      warc_headers_dict=headers, warc_content_type=FIELDS_TYPE)


def warcinfo_record(filename: str, date: str, fields: list[tuple[str, str]]) -> Any:
    """The file's first record: ``fields`` as ``application/warc-fields``."""
    payload = fields_payload(fields)
    headers = {"WARC-Date": date, "WARC-Filename": filename, "Content-Type": FIELDS_TYPE}
    return builder.create_warc_record("", "warcinfo", payload=BytesIO(payload), length=len(payload),
                                      warc_headers_dict=headers, warc_content_type=FIELDS_TYPE)
