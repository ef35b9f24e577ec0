"""The Redis store's URL-row and cash-row formats (docs/reference/redis-layout.md),
in Python and, through :data:`LUA_PARAMETERS`, in Lua, from one set of constants. Pure: no I/O."""

from __future__ import annotations

import struct
from os.path import commonprefix

from extensions.frontier.store import FLAG_HAS_DEPTH, Entry, Status


def tag_of(fingerprint: int) -> str:
    """The host tag of a fingerprint: its top 24 bits (its host's hash) as six hex digits."""
    return f"{(fingerprint >> 40) & 0xFFFFFF:06x}"


_STATUS = struct.Struct(">c")
_FETCHED = struct.Struct(">d")
_CASH_SETTLED = struct.Struct(">ddq")  # settled at mark 0: u, history, visits
_CASH_CREDITED = struct.Struct(">f")  # a row never fetched: u in single precision
HOST_AT = _STATUS.size + _FETCHED.size  # byte offset of a fetched row's host (its length first)
UNFETCHED = 16  # added to the status byte of a row never fetched (no fetch time)
ELIDED = 32  # added to the status byte of a stored row whose host is its tag's (left out)
STATUS_BYTE = {status: str(int(status)).encode() for status in Status}
_STATUS_OF_BYTE = {**{byte[0]: status for status, byte in STATUS_BYTE.items()},
                   **{byte[0] + UNFETCHED: status for status, byte in STATUS_BYTE.items()}}
_TEXT = ("utf-8", "surrogatepass")
CASH_BUCKET_FIELDS = 127  # a cash hashmap's bucket splits past this, '' included: at most 128 fields, a listpack (fpmap.py)
ROW_BUCKET_BYTES = 2048  # the same for a URL-row fpmap
_URL_FORMS = (b"", b"http://", b"https://")  # form 1, 2: the prefix left out (then the host)

#: The ``$`` values of the scripts' row accessors: status bytes, 1-based offsets, the cash formats.
LUA_PARAMETERS = {
    **{f"S_{status.name}": STATUS_BYTE[status].decode() for status in Status},
    "STATUS_SIZE": _STATUS.size,
    "FETCHED_FIRST": _STATUS.size + 1,
    "FETCHED_LAST": _STATUS.size + _FETCHED.size,
    "HOST_AT": HOST_AT,
    "UNFETCHED": UNFETCHED,
    "ELIDED": ELIDED,
    "CASH_SETTLED_FORMAT": _CASH_SETTLED.format.replace("q", "i8"),
    "CASH_CREDITED_FORMAT": _CASH_CREDITED.format,
    "CASH_CREDITED_SIZE": _CASH_CREDITED.size,
    "CASH_BUCKET_FIELDS": CASH_BUCKET_FIELDS,
    "ROW_BUCKET_BYTES": ROW_BUCKET_BYTES,
}


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (>= 0) as a varint."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a varint."""
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


def read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """The varint at ``offset`` and the offset after it."""
    value = shift = 0
    while data[offset] > 0x7F:
        value |= (data[offset] & 0x7F) << shift
        offset, shift = offset + 1, shift + 7
    return value | data[offset] << shift, offset + 1


def _put(out: bytearray, text: str | bytes, host: bytes = b"") -> None:
    value, form = text.encode(*_TEXT) if isinstance(text, str) else text, 0
    for number in (1, 2) if host else ():
        if value.startswith(_URL_FORMS[number]) and value.startswith(host, len(_URL_FORMS[number])):
            value, form = value[len(_URL_FORMS[number]) + len(host):], number
            break
    write_varint(out, len(value) * 4 + form + 1)
    out += value


def _get(row: bytes, offset: int, host: bytes = b"") -> tuple[bytes, int]:
    code, offset = read_varint(row, offset)
    end = offset + ((code - 1) >> 2)
    form = (code - 1) & 3
    return (_URL_FORMS[form] + host if form else b"") + row[offset:end], end


def _put_referer(out: bytearray, referer: str, url: bytes) -> None:
    value = referer.encode(*_TEXT)
    shared = len(commonprefix((value, url)))
    write_varint(out, shared)
    write_varint(out, len(value) - shared)
    out += value[shared:]


def _get_referer(row: bytes, offset: int, url: bytes) -> tuple[bytes, int]:
    shared, offset = read_varint(row, offset)
    length, offset = read_varint(row, offset)
    return url[:shared] + row[offset:offset + length], offset + length


def pack_row(entry: Entry, status: Status, seq: int, fetched: float | None = None) -> bytes:
    """``entry`` as a URL row."""
    if fetched:
        out = bytearray(STATUS_BYTE[status] + _FETCHED.pack(fetched))
    else:
        out = bytearray((STATUS_BYTE[status][0] + UNFETCHED,))
    url, host = entry.url.encode(*_TEXT), entry.host.encode(*_TEXT)
    netloc = _netloc(url, host)
    write_varint(out, len(netloc) * 2 + (netloc is not host))
    out += netloc
    priority = entry.priority * 2 if entry.priority >= 0 else -entry.priority * 2 - 1
    numbers = (seq, entry.level, priority, entry.depth, entry.flags ^ FLAG_HAS_DEPTH)
    texts = (entry.referer, entry.extra, entry.blob)
    present = 0
    for bit, value in enumerate(numbers):
        present |= bool(value) << bit
    for bit, value in enumerate(texts, 5):
        present |= (value is not None) << bit
    out.append(present)
    for number in numbers:
        if number:
            write_varint(out, number)
    _put(out, url, netloc)
    if entry.referer is not None:
        _put_referer(out, entry.referer, url)
    for text in texts[1:]:
        if text is not None:
            _put(out, text)
    return bytes(out)


def _netloc(value: bytes, host: bytes) -> bytes:
    """``host`` (itself), or with ``:PORT`` if the URL ``value`` names a port right after it."""
    for prefix in _URL_FORMS[1:]:
        at = len(prefix) + len(host)
        if value.startswith(prefix) and value.startswith(host, len(prefix)) and value[at:at + 1] == b":":
            end = at + 1
            while value[end:end + 1].isdigit():
                end += 1
            return value[len(prefix):end] if end > at + 1 else host
    return host


def expand_row(stored: bytes, tag_host: bytes | None) -> bytes:
    """A row as stored in its tag's map (``tag_host``: the map's ``H``, a
    host field as stored) as a whole row."""
    if stored[0] < STATUS_BYTE[Status.QUEUED][0] + ELIDED:
        return stored
    if tag_host is None:
        raise ValueError("a row without its host in a map without one (field H)")
    row = bytes((stored[0] - ELIDED,)) + stored[1:]
    at = _host_at(row)
    return row[:at] + tag_host + row[at:]


def _host_at(row: bytes) -> int:
    """Where a row's host begins: after the fetch time, if it has one."""
    return _STATUS.size if row[0] >= STATUS_BYTE[Status.QUEUED][0] + UNFETCHED else HOST_AT


def _fields(row: bytes) -> tuple[bytes, bytes, list[int], int, int]:
    """The host, with its port if the row has one, the five numbers, the
    present byte and the offset of the URL."""
    code, start = read_varint(row, _host_at(row))
    netloc = row[start:start + (code >> 1)]
    offset = start + (code >> 1)
    present, offset = row[offset], offset + 1
    numbers = [0] * 5
    for bit in range(5):
        if present >> bit & 1:
            numbers[bit], offset = read_varint(row, offset)
    return netloc.rpartition(b":")[0] if code & 1 else netloc, netloc, numbers, present, offset


def unpack_entry(fingerprint: int, row: bytes) -> Entry:
    """The entry of a URL row."""
    host, netloc, (_, level, priority, depth, flags), present, offset = _fields(row)
    url, offset = _get(row, offset, netloc)
    referer = extra = blob = None
    if present & 32:
        referer, offset = _get_referer(row, offset, url)
    if present & 64:
        extra, offset = _get(row, offset)
    if present & 128:
        blob, offset = _get(row, offset)
    return Entry(fingerprint, url.decode(*_TEXT), host.decode(*_TEXT), level,
                 -(priority + 1) // 2 if priority & 1 else priority // 2, depth,
                 None if referer is None else referer.decode(*_TEXT), flags ^ FLAG_HAS_DEPTH,
                 None if extra is None else extra.decode(*_TEXT), blob)


def row_url(row: bytes) -> str:
    """The URL of a row, without decoding the rest."""
    _, netloc, _, _, offset = _fields(row)
    return _get(row, offset, netloc)[0].decode(*_TEXT)


def row_head(row: bytes) -> tuple[Status, float | None, int, int]:
    """``(status, fetched, seq, level)`` without decoding the entry."""
    fetched = _FETCHED.unpack_from(row, _STATUS.size)[0] if _host_at(row) == HOST_AT else 0.0
    numbers = _fields(row)[2]
    return _STATUS_OF_BYTE[row[0]], fetched or None, numbers[0], numbers[1]


def row_status(row: bytes) -> Status:
    return _STATUS_OF_BYTE[row[0]]


def fetched_bytes(now: float) -> bytes:
    """A fetch time as the scripts write it into a row."""
    return _FETCHED.pack(now)


def unpack_cash(value: bytes) -> tuple[float, float, float, int]:
    """``(u, history, 0.0, visits)`` of a row as the scripts write it (its cash at dividend ``D``: ``u + D``)."""
    if len(value) == _CASH_CREDITED.size:
        return _CASH_CREDITED.unpack(value)[0], 0.0, 0.0, 0
    if len(value) == _CASH_SETTLED.size:
        u, history, visits = _CASH_SETTLED.unpack(value)
        return u, history, 0.0, visits
    raise ValueError(f"a cash row of {len(value)} bytes (4 or 24 expected)")
