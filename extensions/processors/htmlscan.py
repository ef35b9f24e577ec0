""":func:`scan_html`: a bounded streaming pass (libxml2's push parser, no
tree) feeding an lxml parser target the elements of the first ``max_bytes``
of the body, decoded as parsel does; a target sets ``done`` to stop."""

from __future__ import annotations

import codecs
from typing import Any, Protocol

from lxml import etree

from extensions.contentseen.text import codec_name

#: Bytes decoded and fed per step; a done target stops within one chunk.
CHUNK_BYTES = 64 * 1024


class ScanTarget(Protocol):
    """What :func:`scan_html` drives: lxml's parser-target interface."""

    done: bool

    def start(self, tag: str, attrib: Any) -> None: ...  # attrib: the attributes, read with get


def scan_html(body: bytes, encoding: str | None, target: ScanTarget, max_bytes: int) -> bool:
    """Feed the start tags of ``body[:max_bytes]`` to ``target``; True if the body was cut."""
    decoder = codecs.getincrementaldecoder(codec_name(encoding))("replace")
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
    """lxml's view of a ScanTarget: its ``start`` and the ``close`` lxml requires."""

    def __init__(self, target: ScanTarget) -> None:
        self.start = target.start

    def close(self) -> None:
        return None
