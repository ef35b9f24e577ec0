"""The egg ``scrapyd-deploy`` builds holds the project and our extensions.

scrapyd-deploy runs ``setup.py clean -a bdist_egg -d DIR`` and uploads the
egg; scrapyd then imports the settings module named by the ``scrapy``
entry point. Build the same egg and load the project from it alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_egg(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "out", "build", "*.egg-info", "__pycache__", ".hypothesis"))
    subprocess.run([sys.executable, "setup.py", "clean", "-a", "bdist_egg", "-d", str(tmp_path)],
                   cwd=source, check=True, capture_output=True)
    (egg,) = tmp_path.glob("*.egg")
    return egg


def test_egg_contains_the_project_and_every_extension(tmp_path: Path) -> None:
    egg = build_egg(tmp_path)
    names = set(zipfile.ZipFile(egg).namelist())
    for module in ("crawler/settings.py", "crawler/spiders/web.py", "extensions/addon.py",
                   "extensions/frontier/scheduler.py", "extensions/backends/sqlite/store.py",
                   "extensions/processors/html_links.py", "extensions/resolver.py"):
        assert module in names, module
    entry_points = zipfile.ZipFile(egg).read("EGG-INFO/entry_points.txt").decode()
    assert "settings = crawler.settings" in entry_points


def test_the_web_spider_loads_from_the_egg_alone(tmp_path: Path) -> None:
    egg = build_egg(tmp_path)
    script = (
        "from scrapy.utils.project import get_project_settings\n"
        "from scrapy.spiderloader import SpiderLoader\n"
        "import crawler, extensions.frontier.scheduler as f\n"
        "assert crawler.__file__.startswith(%r), crawler.__file__\n"
        "settings = get_project_settings()\n"
        "print(sorted(SpiderLoader.from_settings(settings).list()), dict(settings.getdict('ADDONS')))\n"
    ) % str(egg)
    env = dict(os.environ, PYTHONPATH=str(egg), SCRAPY_SETTINGS_MODULE="crawler.settings")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)
    assert "['web']" in out.stdout
    assert "extensions.addon.WebcrawlerAddon" in out.stdout
