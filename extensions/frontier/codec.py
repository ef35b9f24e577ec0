"""Requests to compact store entries and back: a plain GET as columns plus a
short JSON ``extra``, anything else pickled; an unserialisable one ``FLAG_MEMORY``."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

from scrapy import Request
from scrapy.utils.request import request_from_dict

from extensions.frontier.store import (
    FLAG_BLOB,
    FLAG_DONT_FILTER,
    FLAG_HAS_DEPTH,
    FLAG_MEMORY,
    Entry,
)

#: Meta keys stored compactly (JSON values) besides ``depth``.
COMPACT_META_KEYS = frozenset(
    {
        "aopic_cash",
        "dont_cache",
        "dont_obey_robotstxt",
        "dont_redirect",
        "dont_retry",
        "download_timeout",
        "handle_httpstatus_all",
        "handle_httpstatus_list",
        "is_start_request",
        "link_text",
        "max_retry_times",
        "redirect_reasons",
        "redirect_times",
        "redirect_ttl",
        "redirect_urls",
        "retry_times",
    }
)
_JSON_SCALARS = (str, int, float, bool, type(None))


def _method_name(spider: Any, func: Callable[..., Any] | None) -> str | None | bool:
    """The name of a spider method, None for no callback, False otherwise."""
    if func is None:
        return None
    if getattr(func, "__self__", None) is not spider or spider is None:
        return False
    name = func.__func__.__name__  # type: ignore[attr-defined]
    own = getattr(spider, name, None)
    return name if getattr(own, "__func__", None) is func.__func__ else False  # type: ignore[attr-defined]


def _json_value(value: Any) -> bool:
    if isinstance(value, _JSON_SCALARS):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, _JSON_SCALARS) for item in value)
    return False


def _compact_extra(request: Request, spider: Any) -> dict[str, Any] | None:
    """The ``extra`` dict of a compactly storable request, None if it is not."""
    if type(request) is not Request or request.method != "GET" or request.body:
        return None
    if request.cookies or request.flags or request.cb_kwargs:
        return None
    if any(name.lower() != b"referer" for name in request.headers):
        return None
    extra: dict[str, Any] = {}
    if request.encoding != "utf-8":  # response.follow() passes the page's
        extra["enc"] = request.encoding
    for key, func in (("cb", request.callback), ("eb", request.errback)):
        name = _method_name(spider, func)
        if name is False:
            return None
        if name is not None:
            extra[key] = name
    meta = {k: v for k, v in request.meta.items() if k != "depth"}
    if not set(meta) <= COMPACT_META_KEYS or not all(map(_json_value, meta.values())):
        return None
    if meta:
        extra["meta"] = meta
    return extra


def encode(request: Request, fingerprint: int, host: str, level: int, spider: Any) -> Entry:
    """The store entry of ``request``."""
    depth = int(request.meta.get("depth", 0))
    flags = FLAG_DONT_FILTER if request.dont_filter else 0
    if "depth" in request.meta:
        flags |= FLAG_HAS_DEPTH
    extra = _compact_extra(request, spider)
    if extra is not None:
        referer = request.headers.get(b"Referer")
        return Entry(
            fingerprint, request.url, host, level, request.priority, depth,
            referer.decode("latin-1") if referer else None, flags,
            json.dumps(extra, separators=(",", ":")) if extra else None, None,
        )
    try:
        blob = pickle.dumps(request.to_dict(spider=spider), protocol=pickle.HIGHEST_PROTOCOL)
        flags |= FLAG_BLOB
    except (ValueError, TypeError, AttributeError, pickle.PicklingError):
        blob, flags = None, flags | FLAG_MEMORY
    return Entry(fingerprint, request.url, host, level, request.priority, depth, None, flags, None, blob)


def decode(entry: Entry, spider: Any) -> Request:
    """The request ``entry`` stands for (not for ``FLAG_MEMORY`` entries)."""
    if entry.flags & FLAG_BLOB:
        assert entry.blob is not None
        return request_from_dict(pickle.loads(entry.blob), spider=spider)  # noqa: S301 - our own file
    extra = json.loads(entry.extra) if entry.extra else {}
    meta = dict(extra.get("meta", {}))
    if entry.flags & FLAG_HAS_DEPTH:
        meta["depth"] = entry.depth
    callback = getattr(spider, extra["cb"]) if "cb" in extra else None
    errback = getattr(spider, extra["eb"]) if "eb" in extra else None
    # entry.url is already percent-encoded by Request (safe_url_string is
    # idempotent): set as is; the flag only lives through __init__.
    meta["verbatim_url"] = True
    request = Request(
        entry.url,
        encoding=extra.get("enc", "utf-8"),
        callback=callback,
        errback=errback,
        priority=entry.priority,
        dont_filter=bool(entry.flags & FLAG_DONT_FILTER),
        headers={"Referer": entry.referer} if entry.referer else None,
        meta=meta,
    )
    del request.meta["verbatim_url"]
    return request
