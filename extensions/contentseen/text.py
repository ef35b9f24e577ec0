"""The visible text of an HTML body, whitespace-normalised: markup, comments, PIs and the
content of ``<script>``, ``<style>``, ``<noscript>``, ``<template>`` dropped, ``<title>``
kept, every tag boundary a space, undecodable bytes U+FFFD."""

from __future__ import annotations

import codecs

from lxml import etree

DROPPED_ELEMENTS = ("script", "style", "noscript", "template")

# comments and PIs stay in the tree: they split the text around them (a
# boundary, as a tag is) and their own text is not read
_PARSER = etree.HTMLParser(no_network=True)
_UTF8_PARSER = etree.HTMLParser(no_network=True, encoding="utf-8")
# the text nodes in document order, as plain str: itertext's strings at a fifth of its time
_TEXT_NODES = etree.XPath(".//text()", smart_strings=False)


def codec_name(encoding: str | None) -> str:
    """A Python codec for ``encoding``; UTF-8 when unknown or not a codec."""
    try:
        return codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return "utf-8"


def decode_body(body: bytes, encoding: str | None = None) -> str:
    """``body`` as text in ``encoding`` (UTF-8 when unknown or not a codec)."""
    return body.decode(codec_name(encoding), "replace")


def visible_text(body: bytes, encoding: str | None = None) -> str:
    """The whitespace-normalised visible text of the HTML document ``body`` (``""`` for an
    empty or unparsable one: it never raises)."""
    root, _ = text_tree(body, encoding)
    return text_of(root)


def text_tree(body: bytes, encoding: str | None = None) -> tuple[etree._Element | None, bool]:
    """The tree :func:`visible_text` reads (libxml2's HTML parser), and
    whether libxml2 parsed the whole document (False when it stopped at a
    resource limit)."""
    return _parse(decode_body(body, encoding))


def text_of(root: etree._Element | None) -> str:
    """The visible text of a :func:`text_tree` tree; empties the tree's
    dropped elements in place (their tails stay)."""
    if root is None:
        return ""
    for element in list(root.iter(*DROPPED_ELEMENTS)):
        element.clear(keep_tail=True)
    # text nodes joined by a space (a tag boundary is one); runs of any
    # Unicode whitespace (\xa0 too) as one space, ends stripped
    return " ".join(" ".join(_TEXT_NODES(root)).split())


def _parse(text: str) -> tuple[etree._Element | None, bool]:
    if not text or text.isspace():  # not text.strip(), without copying the text
        return None, True
    data, parser = text, _PARSER
    try:
        try:
            return etree.fromstring(data, parser), _complete(parser)
        except ValueError:
            # lxml refuses str input that declares its own encoding: hand it over as UTF-8
            data, parser = text.encode("utf-8"), _UTF8_PARSER
            return etree.fromstring(data, parser), _complete(parser)
    except (ValueError, etree.LxmlError):
        return None, False


def _complete(parser: etree.HTMLParser) -> bool:
    """False if the last parse stopped at one of libxml2's limits (nesting depth, text size)."""
    return not any(error.type == _RESOURCE_LIMIT for error in parser.error_log)


_RESOURCE_LIMIT = etree.ErrorTypes.ERR_RESOURCE_LIMIT
