"""Every default lives in extensions/defaults.py: a component that reads one
of our settings with a fallback takes the fallback from there, so that a
crawler without the add-on (``SCHEDULER`` set alone, as Scrapy's own tests
do) behaves as documented. (Was: the robots.txt middleware's inline 60 s
retry delay against the documented 10 s.)"""

from __future__ import annotations

import re
from pathlib import Path

from extensions import defaults

ROOT = Path(__file__).resolve().parent.parent
READ = re.compile(r'settings\.(?:get|getint|getfloat|getbool|getlist|getdict)\(\s*"([A-Z_0-9]+)",\s*([^,)]+)')


def test_no_component_repeats_a_default_inline() -> None:
    offenders = []
    for path in sorted([*ROOT.joinpath("extensions").rglob("*.py"), *ROOT.joinpath("crawler").rglob("*.py")]):
        if path.name == "defaults.py":
            continue
        for name, fallback in READ.findall(path.read_text()):
            if hasattr(defaults, name) and fallback.strip() not in (f"defaults.{name}", "None"):
                offenders.append(f"{path.relative_to(ROOT)}: {name} falls back to {fallback.strip()}")
    assert not offenders, "\n".join(offenders)
