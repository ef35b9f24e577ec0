"""Sphinx configuration of webcrawler's documentation (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "webcrawler"
author = "the webcrawler authors"
extensions = ["myst_parser", "settings_reference"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
myst_heading_anchors = 3
nitpicky = False
