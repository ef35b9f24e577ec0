"""A bounded, streaming pass over an HTML document (Mercator's rewind input
stream) for the HTML processors.

A processor gives a *target* (lxml's parser target interface:
``start(tag, attrib)`` for every element, implied ones too) and
:func:`scan_html` feeds it the first ``max_bytes`` of the body in chunks
through libxml2's push parser. No tree is built: each chunk is decoded with
the response's encoding (bytes that do not decode become U+FFFD), NULs are
dropped and the chunk is handed to libxml2 as UTF-8, as parsel does with the
whole document, so a target sees the elements of ``response.selector``'s
tree, in document order. A target that has seen enough sets ``done`` and the
scan stops at the end of the current chunk.

Memory is the chunk, libxml2's stack of open elements and what the target
keeps, whatever the document's size; time is bounded by ``max_bytes``.
"""

from __future__ import annotations

import codecs
from typing import Protocol

from lxml import etree

__all__ = ["CHUNK_BYTES", "ScanTarget", "scan_html"]

#: Bytes decoded and fed per step; a done target stops within one chunk.
CHUNK_BYTES = 64 * 1024


class ScanTarget(Protocol):
    """What :func:`scan_html` drives: lxml's parser-target interface."""

    done: bool

    def start(self, tag: str, attrib: dict[str, str]) -> None: ...


def scan_html(body: bytes, encoding: str | None, target: ScanTarget, max_bytes: int) -> bool:
    """Feed the start tags of ``body[:max_bytes]`` to ``target``.

    Returns True if the scan stopped before the end of the body: the body is
    longer than ``max_bytes`` and the target never said ``done`` (a
    truncation the caller counts). Malformed HTML never raises: libxml2
    recovers, and a parser error ends the scan where it happened.
    """
    decoder = codecs.getincrementaldecoder(_codec(encoding))("replace")
    parser = etree.HTMLParser(target=_Target(target), encoding="utf-8", recover=True, no_network=True,
                              remove_comments=True, remove_pis=True, huge_tree=True)
    end = min(len(body), max(0, max_bytes))
    position = 0
    try:
        while position < end and not target.done:
            chunk = body[position:min(position + CHUNK_BYTES, end)]
            position += len(chunk)
            text = decoder.decode(chunk, final=position >= end)
            if text:
                parser.feed(text.replace("\x00", "").encode("utf-8"))
        if not target.done:
            parser.close()
    except etree.LxmlError:
        pass
    return position < len(body) and not target.done


class _Target:
    """lxml's view of a ScanTarget: its own ``start`` (no extra call per
    element) and the ``close`` lxml requires."""

    def __init__(self, target: ScanTarget) -> None:
        self.start = target.start

    def close(self) -> None:
        return None


def _codec(encoding: str | None) -> str:
    """A Python codec for ``encoding``; UTF-8 when unknown."""
    try:
        return codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return "utf-8"
