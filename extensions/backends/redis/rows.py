"""The Redis store's row formats, in Python and in Lua, from one set of constants.

Pure: no I/O. A URL row (a field of ``P:{T}:urls``, bytes)::

    status   1 byte   ASCII digit: 0 queued, 1 inflight, 2 done, 3 failed, 4 excluded,
                      5 deferred, 6 refused
    fetched  8 bytes  big-endian double, unix time the last fetch ended (0: never)
    seq      8 bytes  big-endian int64, discovery order (rebuild order)
    level, priority, depth, flags      >i, >q, >q, >i
    url, host, referer, extra, blob    each >i length (-1: None) + UTF-8 or bytes

A cash row (a field of ``P:{T}:cash``): cash, history, mark (doubles) and
visits (int64), big-endian.

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


_HEAD = struct.Struct(">cdqiqqi")  # status, fetched, seq, level, priority, depth, flags
_STATUS = struct.Struct(">c")
_FETCHED = struct.Struct(">d")
_LENGTH = struct.Struct(">i")
_CASH = struct.Struct(">dddq")
ROW_URL_AT = _HEAD.size  # byte offset of a row's URL (its length first)
STATUS_BYTE = {status: str(int(status)).encode() for status in Status}
_STATUS_OF_BYTE = {byte[0]: status for status, byte in STATUS_BYTE.items()}
_TEXT = ("utf-8", "surrogatepass")

#: The ``$`` values of the scripts' row accessors: status bytes, 1-based offsets, the cash format.
LUA_PARAMETERS = {
    **{f"S_{status.name}": STATUS_BYTE[status].decode() for status in Status},
    "STATUS_SIZE": _STATUS.size,
    "FETCHED_FIRST": _STATUS.size + 1,
    "FETCHED_LAST": _STATUS.size + _FETCHED.size,
    "URL_AT": ROW_URL_AT,
    "CASH_FORMAT": _CASH.format.replace("q", "i8"),
}
assert _HEAD.format.startswith(">cd")  # status, then fetch time: what the Lua accessors read


def _put(parts: list[bytes], value: bytes | None) -> None:
    if value is None:
        parts.append(_LENGTH.pack(-1))
    else:
        parts.append(_LENGTH.pack(len(value)))
        parts.append(value)


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode(*_TEXT)


def pack_row(entry: Entry, status: Status, seq: int, fetched: float | None = None) -> bytes:
    """``entry`` as a URL row."""
    parts = [_HEAD.pack(STATUS_BYTE[status], fetched or 0.0, seq, entry.level,
                        entry.priority, entry.depth, entry.flags)]
    for value in (_text(entry.url), _text(entry.host), _text(entry.referer), _text(entry.extra), entry.blob):
        _put(parts, value)
    return b"".join(parts)


def unpack_entry(fingerprint: int, row: bytes) -> Entry:
    """The entry of a URL row."""
    _, _, _, level, priority, depth, flags = _HEAD.unpack_from(row)
    offset = _HEAD.size
    values: list[bytes | None] = []
    for _ in range(5):
        (length,) = _LENGTH.unpack_from(row, offset)
        offset += _LENGTH.size
        if length < 0:
            values.append(None)
        else:
            values.append(row[offset:offset + length])
            offset += length
    url, host, referer, extra, blob = values
    return Entry(fingerprint, url.decode(*_TEXT), host.decode(*_TEXT),  # type: ignore[union-attr]
                 level, priority, depth, _str(referer), flags, _str(extra), blob)


def _str(value: bytes | None) -> str | None:
    return None if value is None else value.decode(*_TEXT)


def row_head(row: bytes) -> tuple[Status, float | None, int, int]:
    """``(status, fetched, seq, level)`` without decoding the entry."""
    status, fetched, seq, level = _HEAD.unpack_from(row)[:4]
    return _STATUS_OF_BYTE[status[0]], fetched or None, seq, level


def row_status(row: bytes) -> Status:
    return _STATUS_OF_BYTE[row[0]]


def fetched_bytes(now: float) -> bytes:
    """A fetch time as the scripts write it into a row."""
    return _FETCHED.pack(now)


def pack_cash(cash: float, history: float, mark: float, visits: int) -> bytes:
    return _CASH.pack(cash, history, mark, visits)


def unpack_cash(value: bytes) -> tuple[float, float, float, int]:
    return _CASH.unpack(value)  # type: ignore[return-value]
