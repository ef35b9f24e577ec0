"""The documentation site builds cleanly and its settings reference is complete."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import signal
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
    code = code_text()
    known |= set(re.findall(r"settings\.get\w*\(\s*\"([A-Z][A-Z0-9_]+)\"", code))  # read without a default here
    for names in re.findall(r"^\s*([A-Z][A-Z0-9_]*(?:,\s*[A-Z][A-Z0-9_]*)*)\s*(?::[^=\n]+)?=[^=]", code, re.M):
        known |= {name.strip() for name in names.split(",")}  # the code's constants the docs name
    named = set()
    for page in (ROOT / "docs").rglob("*.md"):
        if "_build" not in page.parts:
            named |= set(re.findall(r"`-s ([A-Z][A-Z0-9_]+)=|`([A-Z][A-Z0-9]+_[A-Z0-9_]+)`", page.read_text()))
    names = {a or b for a, b in named} - {"NAME"}  # -s NAME=VALUE, the placeholder
    assert sorted(names - known) == []


# --- The README, the stats reference, the commands reference --------------------------------

README = ROOT / "README.md"
STATS_PAGE = ROOT / "docs" / "reference" / "stats.md"
COMMANDS_PAGE = ROOT / "docs" / "reference" / "commands.md"
STAT_PREFIXES = ("aopic", "breaker", "contentseen", "distributed", "dns", "frontier", "gc", "hostyield",
                 "images", "items", "linkgraph", "links", "processors", "pushback", "redis", "report",
                 "revisit", "robotstxt", "seeds", "sitemaps", "urlfilter", "warc")


def code_text() -> str:
    """Every Python module of the crawler's packages, as one text."""
    return "\n".join(path.read_text() for package in ("extensions", "crawler")
                     for path in sorted((ROOT / package).rglob("*.py")))


def stat_exists(name: str, code: str) -> bool:
    """``name`` is recorded by the code: named literally, or built by an f-string
    ``f"prefix/{...}"`` whose last part the code names as a string. A family
    (``prefix/<placeholder>``) exists when one of its stats is named or built."""
    if f'"{name}"' in code:
        return True
    family = re.split(r"[<\[]", name)[0]
    if family != name:
        return f'"{family}' in code or f'f"{family}{{' in code or f'"{family.rstrip("/")}"' in code
    parts = name.split("/")
    for cut in range(len(parts) - 1, 0, -1):
        prefix = "/".join(parts[:cut]) + "/"
        if f'f"{prefix}{{' in code:
            return f'"{parts[-1]}"' in code
    return False


def test_the_readme_is_at_most_300_lines_and_its_links_resolve() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [target for target in targets if "://" not in target]
    assert any(target.startswith("docs/") for target in local)
    assert sorted(target for target in local if not (ROOT / target).exists()) == []


def test_the_readme_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert "make demo   # sets up .venv, starts the synthetic test web, crawls it, prints a report" in text
    assert "make test   # sets up .venv, runs every test (CI runs exactly this: .ci/run)" in text
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_documented_stat_exists_and_every_named_stat_is_documented() -> None:
    code = code_text()
    page = STATS_PAGE.read_text()
    documented = set(re.findall(r"`((?:%s)/[A-Za-z0-9_/<>|\\]+)`" % "|".join(STAT_PREFIXES), page))
    documented = {name.replace("\\|", "|") for name in documented}
    assert len(documented) > 100
    assert sorted(name for name in documented if not stat_exists(name, code)) == []
    named = set(re.findall(r'"((?:%s)/[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*)"' % "|".join(STAT_PREFIXES), code))
    named -= {"warc/revisit"}  # the CDXJ "mime" of a revisit record, not a stat
    families = [re.split(r"[<\[]", name)[0] for name in documented if "<" in name]
    missing = [name for name in named if name not in documented
               and not any(name.startswith(family) for family in families)]
    assert sorted(missing) == []


def test_every_documented_metric_is_exported() -> None:
    """Each ``webcrawler_*`` metric the docs name is built by extensions/prometheus.py from a
    stat name (``PREFIX + name``): its stem is named there."""
    code = (ROOT / "extensions" / "prometheus.py").read_text()
    names = set()
    for page in (ROOT / "docs").rglob("*.md"):
        if "_build" not in page.parts:
            names |= set(re.findall(r"`(webcrawler_[a-z_]+)", page.read_text()))
    assert len(names) > 20
    stems = {re.sub(r"_total$", "", name[len("webcrawler_"):]) for name in names}
    assert sorted(stem for stem in stems if f'"{stem}' not in code and f"{stem}" not in code) == []


def test_every_command_option_is_in_the_commands_reference() -> None:
    page = COMMANDS_PAGE.read_text()
    options = set()
    for module in sorted((ROOT / "crawler" / "commands").glob("*.py")):
        options |= set(re.findall(r'add_argument\(\s*(?:"-\w",\s*)?"(--[a-z-]+)"', module.read_text()))
        if module.stem != "__init__":
            assert f"## `scrapy {module.stem}`" in page, module.stem
    options |= set(re.findall(r'add_argument\(\s*"(--[a-z-]+)"', (ROOT / "testweb" / "__main__.py").read_text()))
    assert len(options) > 10
    assert sorted(option for option in options
                  if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(option), page)) == []


# --- The getting-started page's first crawl, run as written -----------------------------------

FIRST_CRAWL = ROOT / "docs" / "getting-started" / "first-crawl.md"


def first_crawl_commands() -> list[list[str]]:
    """The shell commands of the page's "Crawl the bundled test web" section, in order."""
    section = FIRST_CRAWL.read_text().split("## Crawl the bundled test web", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(shlex.split(line, comments=True))
    return commands


def test_the_getting_started_first_crawl_runs_as_written(tmp_path: Path) -> None:
    """The page's commands, run from a directory of their own (the project found through
    ``SCRAPY_SETTINGS_MODULE``, as ``scrapy.cfg`` finds it in the repository's root)."""
    commands = first_crawl_commands()
    assert [command[:3] for command in commands] == [
        ["python", "-m", "testweb"], ["scrapy", "crawl", "web"], ["scrapy", "crawlstatus", "-s"]]
    serve, crawl, status = commands
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "crawler.settings",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    web = subprocess.Popen(serve, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    try:
        line = web.stdout.readline() if web.stdout else ""
        assert line.startswith("listening "), line
        result = subprocess.run(crawl, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "Spider closed (finished)" in result.stderr
        out = tmp_path / "out" / "first"
        items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
        seeds = (tmp_path / "out" / "web" / "seeds.txt").read_text().split()
        assert len(items) > 100
        assert {item["url"] for item in items} >= set(seeds)
        report = json.loads((out / "report.json").read_text())
        assert report["stats"]["item_scraped_count"] == len(items)
        assert list((out / "warc").glob("*.warc.gz")) and list((out / "warc").glob("*.cdxj"))
        assert (out / "report" / "index.html").is_file()
        assert (out / "job" / "frontier.sqlite3").is_file()
        shown = subprocess.run(status, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert shown.returncode == 0, shown.stderr[-3000:]
        assert "closed cleanly" in shown.stdout and "queued 0  inflight 0" in shown.stdout
    finally:
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGTERM)
        web.communicate(timeout=60)


def test_every_item_field_is_in_the_items_reference() -> None:
    from crawler.items import PageItem  # noqa: PLC0415
    page = (ROOT / "docs" / "reference" / "items.md").read_text()
    assert len(PageItem.fields) > 15
    assert sorted(name for name in PageItem.fields if f"`{name}`" not in page) == []


def test_every_result_file_the_docs_name_exists() -> None:
    """The docs and the README name only results that ``bench/results/`` holds (the latest run of
    each benchmark), and every result there is named in the benchmarks page or another page."""
    pages = [README, *(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)]
    text = "\n".join(page.read_text() for page in pages)
    named = set(re.findall(r"bench/results/([A-Za-z0-9_.-]+\.(?:txt|png))", text))
    named |= set(re.findall(r"`([a-z0-9_-]+\.(?:txt|png))`", (ROOT / "docs" / "benchmarks.md").read_text()))
    results = {path.name for path in (ROOT / "bench" / "results").iterdir()}
    assert sorted(named - results - {"requirements-bench.txt"}) == []
    assert sorted(name for name in results if name not in text) == []


def test_the_start_page_screenshot_is_taken_by_headless_chromium(site: Path, tmp_path: Path) -> None:
    """``make docs-screenshot``'s script renders the built start page (text, not a blank or an error
    page), and the README shows the screenshot it saved."""
    from matplotlib.image import imread  # noqa: PLC0415

    from screenshot import HEIGHT, PNG, WIDTH, take  # noqa: PLC0415
    from testweb.browser import png_size  # noqa: PLC0415

    shot = take(site / "index.html", tmp_path / "start.png")
    pixels = imread(shot)[:, :, :3]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    not_white = (pixels.min(axis=2) < 0.9).mean()
    assert 0.01 < not_white < 0.5, not_white
    assert png_size(PNG.read_bytes()) == (WIDTH, HEIGHT)
    assert f"]({PNG.relative_to(ROOT)})" in README.read_text()
