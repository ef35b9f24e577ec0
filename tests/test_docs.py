"""The documentation site builds cleanly and its settings reference is complete."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.settings import default_settings

from testweb.crawlrun import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from settings_reference import groups  # noqa: E402

DEFAULTS = ROOT / "extensions" / "defaults.py"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs built as ``make docs`` builds them (warnings are errors)."""
    out = tmp_path_factory.mktemp("docs")
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                             str(ROOT / "docs"), str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def defined_settings() -> set[str]:
    """Every upper-case assignment of extensions/defaults.py, read independently of the directive."""
    return set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*(?::[^=]+)?=", DEFAULTS.read_text(), re.M))


def test_the_docs_build_without_a_warning(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "reference" / "settings.html").is_file()


def test_every_setting_is_in_the_reference_with_its_default_and_a_meaning(site: Path) -> None:
    page = (site / "reference" / "settings.html").read_text()
    names = defined_settings()
    assert len(names) > 100
    assert sorted(name for name in names if f'id="setting-{name}"' not in page) == []
    listed = {setting.name: setting for group in groups() for setting in group.settings}
    assert set(listed) == names
    assert sorted(name for name, setting in listed.items() if not setting.meaning) == []
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for name, setting in listed.items():
        assert f"{name}Default: {setting.default}." in text, name


def test_every_setting_the_docs_name_exists() -> None:
    known = defined_settings() | {name for name in dir(default_settings) if name.isupper()}
    known |= {"REDIS_URL", "SCHEDULER_PERSIST", "SCHEDULER_FLUSH_ON_START"}  # scrapy-redis' names we read
    named = set()
    for page in (ROOT / "docs").rglob("*.md"):
        if "_build" not in page.parts:
            named |= set(re.findall(r"`-s ([A-Z][A-Z0-9_]+)=|`([A-Z][A-Z0-9]+_[A-Z0-9_]+)`", page.read_text()))
    names = {a or b for a, b in named} - {"NAME"}  # -s NAME=VALUE, the placeholder
    assert sorted(names - known) == []
