"""The Redis store's row formats, in Python and in Lua, from one set of constants.

Pure: no I/O. A URL row (a URL's value in the fpmap ``P:{T}:urls``, bytes; a *varint* is
an unsigned LEB128 number, 1 byte below 128)::

    status   1 byte   ASCII digit: 0 queued, 1 inflight, 2 done, 3 failed, 4 excluded,
                      5 deferred, 6 refused
    fetched  8 bytes  big-endian double, unix time the last fetch ended (0: never)
    host     varint length + UTF-8
    url      varint length * 4 + form, then the URL's bytes after what its
             form names: 0 nothing, 1 ``http://HOST``, 2 ``https://HOST``
    seq, level, priority, depth, flags  varints (priority zigzag-coded:
             0, -1, 1, -2 ... as 0, 1, 2, 3 ...)
    referer  varint: 0 None, else length * 4 + form (1 the whole URL, 2
             after ``http://HOST``, 3 after ``https://HOST``), then its bytes
    extra, blob  varint: 0 None, else length + 1, then its bytes

A cash row (a URL's value in the fpmap ``P:{T}:cash``): cash and mark
(doubles), then, unless both are zero, history (double) and visits
(int64), big-endian.

Scripts read rows only through ``lua/include/rows.lua`` and ``cash.lua``,
parameterised by :data:`LUA_PARAMETERS` (from the same structs); they change
only a row's status and fetch time in place.
"""

from __future__ import annotations

import struct

from extensions.frontier.store import Entry, Status


def tag_of(fingerprint: int) -> str:
    """The host tag of a fingerprint: its top 24 bits (its host's hash) as six hex digits."""
    return f"{(fingerprint >> 40) & 0xFFFFFF:06x}"


_STATUS = struct.Struct(">c")
_FETCHED = struct.Struct(">d")
_CASH = struct.Struct(">dddq")
_CASH_SHORT = struct.Struct(">dd")  # a cash row never fetched: cash, mark
HOST_AT = _STATUS.size + _FETCHED.size  # byte offset of a row's host (its length first)
STATUS_BYTE = {status: str(int(status)).encode() for status in Status}
_STATUS_OF_BYTE = {byte[0]: status for status, byte in STATUS_BYTE.items()}
_TEXT = ("utf-8", "surrogatepass")
CASH_BUCKET_BYTES = 1024  # a cash fpmap's bucket splits past this (extensions/backends/redis/fpmap.py)
ROW_BUCKET_BYTES = 2048  # the same for a URL-row fpmap
_URL_FORMS = (b"", b"http://", b"https://")  # form 0, 1, 2: the prefix left out (then the host)

#: The ``$`` values of the scripts' row accessors: status bytes, 1-based offsets, the cash formats.
LUA_PARAMETERS = {
    **{f"S_{status.name}": STATUS_BYTE[status].decode() for status in Status},
    "STATUS_SIZE": _STATUS.size,
    "FETCHED_FIRST": _STATUS.size + 1,
    "FETCHED_LAST": _STATUS.size + _FETCHED.size,
    "HOST_AT": HOST_AT,
    "CASH_FORMAT": _CASH.format.replace("q", "i8"),
    "CASH_SHORT_FORMAT": _CASH_SHORT.format,
    "CASH_SHORT_SIZE": _CASH_SHORT.size,
    "CASH_BUCKET_BYTES": CASH_BUCKET_BYTES,
    "ROW_BUCKET_BYTES": ROW_BUCKET_BYTES,
}


def _varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """The varint at ``offset`` and the offset after it."""
    byte = data[offset]
    if byte < 0x80:
        return byte, offset + 1
    value, shift = 0, 0
    while True:
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value // 2 if not value & 1 else -(value + 1) // 2


def _put(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0)
    else:
        _varint(out, len(value) + 1)
        out += value


def _form(text: bytes, host: bytes) -> tuple[int, bytes]:
    """The shortest form of a URL of ``host``: its number and the bytes kept."""
    for form in (1, 2):
        prefix = _URL_FORMS[form]
        if text.startswith(prefix) and text.startswith(host, len(prefix)):
            return form, text[len(prefix) + len(host):]
    return 0, text


def _unform(form: int, kept: bytes, host: bytes) -> bytes:
    return kept if form == 0 else _URL_FORMS[form] + host + kept


def pack_row(entry: Entry, status: Status, seq: int, fetched: float | None = None) -> bytes:
    """``entry`` as a URL row."""
    out = bytearray(STATUS_BYTE[status])
    out += _FETCHED.pack(fetched or 0.0)
    host = entry.host.encode(*_TEXT)
    _varint(out, len(host))
    out += host
    form, kept = _form(entry.url.encode(*_TEXT), host)
    _varint(out, len(kept) * 4 + form)
    out += kept
    for number in (seq, entry.level, _zigzag(entry.priority), entry.depth, entry.flags):
        _varint(out, number)
    if entry.referer is None:
        out.append(0)
    else:
        form, kept = _form(entry.referer.encode(*_TEXT), host)
        _varint(out, len(kept) * 4 + form + 1)
        out += kept
    _put(out, None if entry.extra is None else entry.extra.encode(*_TEXT))
    _put(out, entry.blob)
    return bytes(out)


def _skip_to_numbers(row: bytes) -> tuple[bytes, int, bytes, int]:
    """The host, the URL's form, the URL's kept bytes and the offset of the numbers."""
    length, offset = _read_varint(row, HOST_AT)
    host = row[offset:offset + length]
    code, offset = _read_varint(row, offset + length)
    end = offset + (code >> 2)
    return host, code & 3, row[offset:end], end  # type: ignore[return-value]


def _numbers(row: bytes, offset: int, count: int) -> tuple[list[int], int]:
    numbers = []
    for _ in range(count):
        number, offset = _read_varint(row, offset)
        numbers.append(number)
    return numbers, offset


def unpack_entry(fingerprint: int, row: bytes) -> Entry:
    """The entry of a URL row."""
    host, form, kept, offset = _skip_to_numbers(row)
    (_, level, priority, depth, flags), offset = _numbers(row, offset, 5)
    code, offset = _read_varint(row, offset)
    referer = None
    if code:
        end = offset + (code >> 2)
        referer = _unform((code & 3) - 1, row[offset:end], host).decode(*_TEXT)
        offset = end
    extra, offset = _get(row, offset)
    blob, _ = _get(row, offset)
    return Entry(fingerprint, _unform(form, kept, host).decode(*_TEXT), host.decode(*_TEXT), level,
                 _unzigzag(priority), depth, referer, flags, None if extra is None else extra.decode(*_TEXT), blob)


def _get(row: bytes, offset: int) -> tuple[bytes | None, int]:
    length, offset = _read_varint(row, offset)
    if not length:
        return None, offset
    return row[offset:offset + length - 1], offset + length - 1


def row_head(row: bytes) -> tuple[Status, float | None, int, int]:
    """``(status, fetched, seq, level)`` without decoding the entry."""
    (fetched,) = _FETCHED.unpack_from(row, _STATUS.size)
    (seq, level), _ = _numbers(row, _skip_to_numbers(row)[3], 2)
    return _STATUS_OF_BYTE[row[0]], fetched or None, seq, level


def row_status(row: bytes) -> Status:
    return _STATUS_OF_BYTE[row[0]]


def fetched_bytes(now: float) -> bytes:
    """A fetch time as the scripts write it into a row."""
    return _FETCHED.pack(now)


def pack_cash(cash: float, history: float, mark: float, visits: int) -> bytes:
    if not history and not visits:
        return _CASH_SHORT.pack(cash, mark)
    return _CASH.pack(cash, history, mark, visits)


def unpack_cash(value: bytes) -> tuple[float, float, float, int]:
    if len(value) == _CASH_SHORT.size:
        cash, mark = _CASH_SHORT.unpack(value)
        return cash, 0.0, mark, 0
    return _CASH.unpack(value)  # type: ignore[return-value]
