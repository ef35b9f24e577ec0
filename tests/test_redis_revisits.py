"""The Redis re-visit record's packing (no server: the store's behaviour is
in tests/test_store_conformance.py): every form round-trips, a usual record
stays under Redis' listpack value limit (64 bytes)."""

from __future__ import annotations

import math

import pytest

from extensions.frontier.store import RevisitRecord
from extensions.backends.redis.revisits import pack_record, unpack_record

USUAL = RevisitRecord(-77, math.inf, 3600.0, visits=12, changes=4, first_visit=1_750_000_000.123456,
                      last_visit=1_750_086_400.654321, last_change=1_750_050_000.5, content=-(1 << 62),
                      etag='"6613a2b0-1f4e"', last_modified="Mon, 08 Apr 2024 07:50:08 GMT")


@pytest.mark.parametrize("record", [
    USUAL,
    USUAL._replace(interval=0.1, visits=256, changes=2**32 - 1, gone=2**16 - 1),  # the wide forms
    USUAL._replace(last_modified="Tue, 08 Apr 2024 07:50:08 GMT"),  # wrong weekday: kept as text
    USUAL._replace(last_modified="Mon, 8 Apr 2024 07:50:08 GMT", etag="W/\"ü\udcff\""),  # text, odd ETag
    USUAL._replace(etag=None, last_modified="Thu, 01 Jan 1970 00:00:00 GMT"),
    USUAL._replace(etag="", last_modified=""),
    USUAL._replace(content=None, etag=None, last_modified=None, interval=1e300),
    RevisitRecord(1, 5.0, 60.0),
], ids=["usual", "wide", "wrong-weekday", "text-date", "epoch", "empty", "bare", "defaults"])
def test_every_form_of_a_record_round_trips(record: RevisitRecord) -> None:
    assert unpack_record(record.fingerprint, record.due, pack_record(record)) == record


def test_a_usual_record_fits_a_listpack_value() -> None:
    assert len(pack_record(USUAL)) <= 64
    assert len(pack_record(USUAL._replace(last_modified="Mon, 8 Apr 2024 07:50:08 GMT"))) > len(pack_record(USUAL))
