"""Pages of real weight for the synthetic web (``WebConfig(weight="real")``).

Sizes follow the HTML pages of the documentation sites the real-web test
serves (Debian's sphinx-doc, python-django-doc, nodejs-doc and
debian-reference-en: 910 pages, measured once and kept here as quantiles):
median 21 KB, mean ~50 KB once the few multi-megabyte single-page manuals are
capped at :data:`MAX_SIZE`. A page is built as those pages are: a head with a
stylesheet and an inline script, a navigation sidebar, a main column of
sections (headings, paragraphs of which about 30% of the bytes are visible
text, code blocks, a table), a footer and a closing script. Its links (20-100,
as the real pages' middle half) are all listed in :class:`Page.links`, in
document order, so the ground truth stays exact. Deterministic: the same rng
state gives the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from html import escape

from testweb.model import WORDS, Link, NavItem, render_link

#: HTML bytes of the real documentation pages at each 5% quantile (0%..95%),
#: then the cap (the 95% point is 204 KB; the largest real page, 5.8 MB, is
#: a whole manual on one page: the big-page case of the test web covers it).
SIZE_QUANTILES = (955, 6062, 6682, 7295, 8093, 9079, 10743, 12221, 14572, 17383, 21373,
                  25915, 30642, 36409, 45126, 56964, 73064, 93981, 123701, 204234)
MAX_SIZE = 400_000
MIN_LINKS, MAX_LINKS = 20, 100

_STYLE = (".sidebar{float:left;width:18em;font-size:90%}.body{margin-left:19em;max-width:60em}"
          "pre{background:#f8f8f8;border:1px solid #ddd;padding:.5em;overflow:auto}"
          "table.docutils{border-collapse:collapse}table.docutils td,table.docutils th{border:1px solid #ccc;"
          "padding:.2em .5em}.highlight .k{color:#007020;font-weight:bold}.highlight .s{color:#4070a0}")
_SCRIPT = ("var DOCUMENTATION_OPTIONS={URL_ROOT:'./',VERSION:'1.0',LANGUAGE:'en',COLLAPSE_INDEX:false,"
           "FILE_SUFFIX:'.html',HAS_SOURCE:true,SOURCELINK_SUFFIX:'.txt'};"
           "document.addEventListener('DOMContentLoaded',function(){var t=document.querySelectorAll('pre');"
           "for(var i=0;i<t.length;i++){t[i].setAttribute('tabindex','0');}});")
_CODE = ('<span class="k">def</span> <span class="nf">{name}</span><span class="p">(</span><span class="n">request'
         '</span><span class="p">,</span> <span class="o">*</span><span class="n">args</span><span class="p">,'
         '</span> <span class="o">**</span><span class="n">kwargs</span><span class="p">):</span>\n'
         '    <span class="sd">&quot;&quot;&quot;{words}.&quot;&quot;&quot;</span>\n'
         '    <span class="n">value</span> <span class="o">=</span> <span class="n">settings</span><span class="o">.'
         '</span><span class="n">get</span><span class="p">(</span><span class="s2">&quot;{upper}&quot;</span>'
         '<span class="p">,</span> <span class="mi">{number}</span><span class="p">)</span>\n'
         '    <span class="k">if</span> <span class="n">value</span> <span class="o">&lt;</span> '
         '<span class="mi">{number}</span><span class="p">:</span>\n'
         '        <span class="k">raise</span> <span class="ne">ValueError</span><span class="p">(</span>'
         '<span class="sa">f</span><span class="s2">&quot;</span><span class="si">{{</span><span class="n">value'
         '</span><span class="si">!r}}</span><span class="s2"> is too small&quot;</span><span class="p">)</span>\n'
         '    <span class="k">return</span> <span class="p">[</span><span class="n">item</span> '
         '<span class="k">for</span> <span class="n">item</span> <span class="ow">in</span> '
         '<span class="n">args</span> <span class="k">if</span> <span class="n">item</span><span class="p">]'
         '</span>\n')


def page_size(rng: random.Random) -> int:
    """A page's HTML bytes, drawn from the real pages' distribution."""
    points = (*SIZE_QUANTILES, MAX_SIZE)
    position = rng.random() * (len(points) - 1)
    low = int(position)
    return int(points[low] + (points[low + 1] - points[low]) * (position - low))


def link_count(rng: random.Random) -> int:
    """How many links a page carries (uniform over the real pages' middle half)."""
    return rng.randint(MIN_LINKS, MAX_LINKS)


_LITERAL = '<code class="docutils literal notranslate"><span class="pre">{}</span></code>'
_REFERENCE = '<a class="reference internal" href="#{0}" title="{0}"><span class="std std-ref">{0}</span></a>'


def _paragraph(rng: random.Random) -> str:
    """A paragraph with Sphinx' inline markup (literals, in-page references)."""
    words = rng.choices(WORDS, k=rng.randint(30, 90))
    for start in range(0, len(words), 12):  # sentences of 12 words
        words[start] = words[start].title()
        words[min(start + 11, len(words) - 1)] += "."
    for at in range(5, len(words), 9):
        words[at] = (_LITERAL if at % 2 else _REFERENCE).format(words[at])
    return f"<p>{' '.join(words)}</p>\n"


def _code(rng: random.Random) -> str:
    name = "_".join(rng.choice(WORDS) for _ in range(2))
    body = _CODE.format(name=name, words=" ".join(rng.choices(WORDS, k=6)),
                        upper=name.upper(), number=rng.randint(1, 999))
    return f'<div class="highlight-python notranslate"><div class="highlight"><pre>{body}</pre></div></div>\n'


def _table(rng: random.Random) -> str:
    cells = rng.choices(WORDS, k=3 * rng.randint(3, 8))
    rows = "".join(f"<tr><td>{cells[i]}</td><td>{cells[i + 1]}</td><td>{cells[i + 2]}</td></tr>\n"
                   for i in range(0, len(cells), 3))
    return f'<table class="docutils"><thead><tr><th>Name</th><th>Type</th><th>Meaning</th></tr></thead>\n' \
           f"<tbody>\n{rows}</tbody></table>\n"


def heavy_page(rng: random.Random, title: str, links: Sequence[Link], nav: Sequence[NavItem]) -> bytes:
    """A documentation-like page of :func:`page_size` bytes (about) with
    ``nav`` in its sidebar and ``links`` spread through its sections, in order."""
    target = page_size(rng)
    head = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style><script>{_SCRIPT}</script></head>\n<body>\n")
    sidebar = ('<div class="sidebar"><h3>Navigation</h3><ul>'
               + "".join(f"<li>{render_link(Link(item.href), item.label)}</li>" for item in nav)
               + '</ul><div role="search"><form action="search.html" method="get"><input type="text" name="q">'
               '</form></div></div>\n')
    tail = ('<div class="footer">&copy; Copyright the authors. Created using a documentation generator.</div>\n'
            f"<script>{_SCRIPT}</script></body></html>\n")
    parts = [head, sidebar, f'<div class="body" role="main"><h1>{escape(title)}</h1>\n']
    size = sum(len(part) for part in parts) + len(tail)
    pending = list(links)
    section = 0
    while size < target:
        section += 1
        block = [f'<h2 id="s{section}">{escape(rng.choice(WORDS).title())} {section}</h2>\n']
        for _ in range(rng.randint(1, 3)):
            block.append(_paragraph(rng))
        roll = rng.random()
        if roll < 0.6:
            block.extend(_code(rng) for _ in range(rng.randint(1, 3)))
        elif roll < 0.7:
            block.append(_table(rng))
        take = max(1, len(links) // 8)
        if pending:
            block.append("<ul>" + "".join(f"<li>{render_link(link)}</li>" for link in pending[:take]) + "</ul>\n")
            del pending[:take]
        text = "".join(block)
        parts.append(text)
        size += len(text)
    if pending:  # the page is full: the rest of its links in a last list
        parts.append("<ul>" + "".join(f"<li>{render_link(link)}</li>" for link in pending) + "</ul>\n")
    parts.append("</div>\n" + tail)
    return "".join(parts).encode("utf-8")
