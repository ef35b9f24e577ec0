"""A Sphinx directive that lists every setting of ``extensions/defaults.py``.

``.. settings-reference::`` (``{settings-reference}`` in MyST) renders one
section per group of the module (its ``# --- Group ---`` headers and the
comment lines under them) and, per setting, its name (a link target
``setting-NAME``), its default as written in the module and its meaning (the
comment on its line and the comment lines right above it). The module is the
single source: the reference cannot drift from the code.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

DEFAULTS = Path(__file__).resolve().parents[2] / "extensions" / "defaults.py"
_HEADER = re.compile(r"#\s*---\s*(.+?)\s*-*\s*$")


@dataclass
class Setting:
    name: str
    default: str
    meaning: str


@dataclass
class Group:
    title: str
    intro: list[str] = field(default_factory=list)
    settings: list[Setting] = field(default_factory=list)


def groups(path: Path = DEFAULTS) -> list[Group]:
    """The module's settings by group, in the module's order."""
    source = path.read_text()
    lines = source.splitlines()
    assignments = {}
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id.isupper() and node.value is not None:
            segment = (ast.get_source_segment(source, node.value) or "").splitlines()
            inner = [line.split("#", 1)[1].strip() for line in segment[1:] if "#" in line]
            value = " ".join(line.split("#", 1)[0].strip() for line in segment)
            assignments[node.lineno] = (target.id, re.sub(r"([\[{(]) | ([\]})])", r"\1\2", value), inner,
                                        node.end_lineno)
    found: list[Group] = []
    comments: list[str] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        header = _HEADER.match(stripped)
        if header:
            found.append(Group(header.group(1)))
            comments = []
        elif stripped.startswith("#"):
            comments.append(stripped.lstrip("#").strip())
        elif number in assignments and found:
            name, default, inner, end = assignments[number]
            last = lines[end - 1] if end == number else lines[number - 1]
            trailing = last.split("#", 1)[1].strip() if "#" in last.split("=", 1)[-1] else ""
            group = found[-1]
            if not group.settings and not group.intro:
                group.intro, comments = comments, []
            meaning = " ".join([*comments, trailing, *inner]).strip()
            if not meaning and name.endswith("_ENABLED"):
                meaning = f"Switches {group.title.split(' (')[0]} on or off."
            if not meaning and group is found[0]:
                meaning = "Scrapy's setting (see Scrapy's documentation), with the crawler's default."
            group.settings.append(Setting(name, " ".join(default.split()), meaning))
            comments = []
        elif not stripped:  # a comment block ends: a group's first one is its intro
            if found and not found[-1].settings and not found[-1].intro:
                found[-1].intro = comments
            comments = []
    return found


def names(path: Path = DEFAULTS) -> set[str]:
    """Every setting the module defines."""
    return {setting.name for group in groups(path) for setting in group.settings}


class SettingsReference(SphinxDirective):
    """``.. settings-reference::``: every setting, by group."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(DEFAULTS))
        sections: list[nodes.Node] = []
        for group in groups():
            section = nodes.section(ids=[nodes.make_id(f"settings-{group.title}")])
            section += nodes.title(text=group.title)
            if group.intro:
                section += nodes.paragraph(text=" ".join(group.intro))
            entries = nodes.definition_list()
            for setting in group.settings:
                term = nodes.term(ids=[f"setting-{setting.name}"])
                term += nodes.literal(text=setting.name)
                body = nodes.paragraph()
                body += nodes.Text("Default: ")
                body += nodes.literal(text=setting.default)
                body += nodes.Text(". " + setting.meaning if setting.meaning else ".")
                definition = nodes.definition()
                definition += body
                entries += nodes.definition_list_item("", term, definition)
            section += entries
            sections.append(section)
        return sections


def setup(app):  # noqa: ANN001, ANN201 (Sphinx' extension hook)
    app.add_directive("settings-reference", SettingsReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
