"""Visible text and exact fingerprints (extensions.contentseen.text, .fingerprint)."""

from __future__ import annotations

import pytest

from extensions.contentseen.features import content_features
from extensions.contentseen.fingerprint import NORMALISED, RAW, from_signed64, text_fingerprint, to_signed64
from extensions.contentseen.text import visible_text


def body_fingerprint(body: bytes, mode: str = RAW, encoding: str | None = None) -> int:
    """The exact test's fingerprint of an HTML page."""
    return content_features(body, encoding, "text/html", mode=mode, near=False).fingerprint

PAGE = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Lantern festival</title>
<style>body { color: red } .hidden-style-word {}</style>
<script>var hiddenScriptWord = "<p>not text</p>";</script>
</head><body>
<!-- a hidden comment word -->
<h1 class="headline" data-note="attribute-word">Harbour news</h1>
<p>The festival <b>opens</b> on Friday.</p>
<noscript>enable javascript word</noscript>
<template><p>template word</p></template>
<ul><li>one</li><li>two</li></ul>
<?php echo "processing instruction"; ?>
</body></html>
"""


def test_visible_text_keeps_title_and_body_text_in_order():
    assert visible_text(PAGE, "utf-8") == "Lantern festival Harbour news The festival opens on Friday. one two"


@pytest.mark.parametrize("hidden", [
    "color", "hiddenScriptWord", "not text", "comment", "attribute-word", "headline",
    "javascript", "template word", "processing", "<", "charset",
])
def test_visible_text_drops_scripts_styles_markup_and_comments(hidden):
    assert hidden not in visible_text(PAGE, "utf-8")


def test_visible_text_decodes_with_the_callers_encoding():
    body = "<p>Café crème à Zürich</p>".encode("iso-8859-1")
    assert visible_text(body, "iso-8859-1") == "Café crème à Zürich"
    assert visible_text("<p>Привет</p>".encode("cp1251"), "cp1251") == "Привет"


def test_visible_text_survives_bad_input():
    assert visible_text(b"", "utf-8") == ""
    assert visible_text(b"<!-- only a comment -->", "utf-8") == ""
    assert visible_text(b"<p>\xc3\x28 bytes</p>", "utf-8") == "\ufffd( bytes"
    assert visible_text(b"<p>text</p>", "no-such-encoding") == "text"
    assert visible_text(b'<?xml version="1.0" encoding="utf-8"?><p>xml</p>', "utf-8") == "xml"


def test_visible_text_normalises_whitespace_including_nbsp():
    assert visible_text(b"<p>  a\n\t b&nbsp;&nbsp;c  </p>", "utf-8") == "a b c"


REINDENTED = PAGE.replace(b"\n", b"\n    ").replace(b"<li>", b"<li>\n   ").replace(b"> <", b">\r\n<")


def test_whitespace_only_changes_are_equal_when_normalised_and_differ_raw():
    assert REINDENTED != PAGE
    assert body_fingerprint(PAGE, RAW) != body_fingerprint(REINDENTED, RAW)
    assert body_fingerprint(PAGE, NORMALISED, "utf-8") == body_fingerprint(REINDENTED, NORMALISED, "utf-8")


def test_normalised_fingerprint_ignores_markup_but_not_words():
    other_markup = PAGE.replace(b"<b>opens</b>", b"<em>opens</em>").replace(b"color: red", b"color: blue")
    other_word = PAGE.replace(b"Friday", b"Monday")
    assert body_fingerprint(other_markup, NORMALISED, "utf-8") == body_fingerprint(PAGE, NORMALISED, "utf-8")
    assert body_fingerprint(other_markup, RAW) != body_fingerprint(PAGE, RAW)
    assert body_fingerprint(other_word, NORMALISED, "utf-8") != body_fingerprint(PAGE, NORMALISED, "utf-8")


def test_fingerprints_are_stable_unsigned_64_bit():
    value = body_fingerprint(PAGE, RAW)
    assert 0 <= value < 1 << 64
    assert value == body_fingerprint(bytes(PAGE), RAW)  # no per-process salt
    assert text_fingerprint(visible_text(b"<p> a\n b </p>")) == text_fingerprint("a b")
    assert from_signed64(to_signed64(value)) == value
    assert -(1 << 63) <= to_signed64(value) < 1 << 63


def test_unknown_fingerprint_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        body_fingerprint(PAGE, "fuzzy")


def test_tags_comments_and_pis_are_word_boundaries_in_the_visible_text():
    assert visible_text(b"<p>one<b>two</b>three<!-- hidden -->four<?pi hidden?>five</p>", "utf-8") \
        == "one two three four five"
    assert visible_text(b"<p>kept<script>x</script>tail<noscript><a>gone</a></noscript>end</p>", "utf-8") \
        == "kept tail end"
