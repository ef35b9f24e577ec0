"""The project's structural rules, read off the source with ``ast``.

* one package per store backend (``extensions/backends/<name>/``): only the
  Redis one imports ``redis`` or holds Lua; the algorithm packages import no
  backend package; no other module compares a backend's name;
* no import cycle among ``extensions/`` modules;
* nothing under ``tests/`` imports ``bench``, nothing under ``bench/``
  imports ``tests``;
* ``extensions/`` imports neither ``testweb`` nor ``tests`` (the crawler
  ships without its test web), and ``testweb/`` does not import ``tests``
  (benchmarks and ``make demo`` use it).

An import counts wherever it is written (at the top or inside a function:
it runs sooner or later), except under ``if TYPE_CHECKING:``, which never
runs. Each failure lists every offending module, import or cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Cycles still open (an entry that no longer offends fails the test, so the list only shrinks).
CYCLES_PENDING: list[tuple[str, ...]] = []
#: The algorithm packages: pure, they declare the protocols they need.
ALGORITHM_PACKAGES = ["extensions/frontier", "extensions/contentseen", "extensions/aopic", "extensions/revisit",
                      "extensions/linkgraph", "extensions/urls"]
BACKEND_PACKAGES = ["extensions.backends.memory", "extensions.backends.sqlite", "extensions.backends.redis",
                    "extensions.backends.settings"]
#: Where a crawl's components are composed: the only modules outside the
#: backends that ask the registry (``extensions.backends``) for a backend.
COMPOSITION_MODULES = {"extensions/frontier/config.py", "extensions/linkgraph/service.py"}
BACKEND_NAMES = {"memory", "sqlite", "redis"}
#: What only Lua (a Redis script) spells.
LUA_MARKERS = ("redis.call(", "redis.pcall(", "KEYS[", "ARGV[")


@dataclass(frozen=True)
class Import:
    """One import statement: the importing module, the line, the module
    named (``a`` of ``import a`` and of ``from a import b, c``) and, for
    ``from``, the names imported from it (``b``, ``c``: submodules or not)."""

    module: str
    line: int
    target: str
    names: tuple[str, ...] = ()

    def modules(self, known: set[str]) -> list[str]:
        """The modules of ``known`` this import loads: ``a.b`` for a
        submodule ``b``; ``a`` itself unless every name is a submodule."""
        submodules = [f"{self.target}.{name}" for name in self.names if f"{self.target}.{name}" in known]
        rest = [self.target] if self.target in known and len(submodules) < max(len(self.names), 1) else []
        return submodules + rest


def module_name(path: Path) -> str:
    """``extensions/frontier/scheduler.py`` -> ``extensions.frontier.scheduler``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except the bodies of ``if TYPE_CHECKING:`` (their ``else`` counts)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(path: Path, source: str | None = None) -> list[Import]:
    """The imports of ``path`` (or of ``source`` as if it were that file)
    that run: at the top or in a function, not under ``if TYPE_CHECKING:``;
    relative imports resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    text = path.read_text() if source is None else source
    found = []
    for node in _runtime_nodes(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append(Import(module, node.lineno, base, tuple(alias.name for alias in node.names)))
    return sorted(found, key=lambda imp: imp.line)


def imports_from(packages: list[str], forbidden: list[str]) -> list[str]:
    """``file:line imports target`` for each import under ``packages`` of a
    module of ``forbidden`` (the package itself or anything in it)."""
    offending = []
    for package in packages:
        for path in python_files(package):
            for imp in imports_of(path):
                if any(imp.target == name or imp.target.startswith(name + ".") for name in forbidden):
                    offending.append(f"{path.relative_to(ROOT)}:{imp.line} imports {imp.target}")
    return sorted(set(offending))


def import_edges(package: str) -> dict[tuple[str, str], str]:
    """(importer, imported) for each import between modules of ``package``
    -> where the first such import is written (``file:line``)."""
    modules = {module_name(path): path for path in python_files(package)}
    edges: dict[tuple[str, str], str] = {}
    for name, path in modules.items():
        for imp in imports_of(path):
            for target in imp.modules(set(modules)):
                if target != name:
                    edges.setdefault((name, target), f"{path.relative_to(ROOT)}:{imp.line}")
    return edges


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports."""
    graph: dict[str, set[str]] = {module_name(path): set() for path in python_files(package)}
    for importer, imported in import_edges(package):
        graph[importer].add(imported)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan),
    each as one cycle through all its modules where one is found, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete cycle inside ``component``: the shortest from its first
    module back to itself (breadth-first)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == start:
                    return paths[node] + [start]
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    return component


def test_only_the_redis_backend_imports_redis() -> None:
    offending = [line for line in imports_from(["extensions", "crawler"], ["redis"])
                 if not line.startswith("extensions/backends/redis/")]
    assert not offending, "redis imported outside extensions/backends/redis:\n  " + "\n  ".join(offending)


def test_only_the_redis_backend_holds_lua() -> None:
    offending = []
    for package in ("extensions", "crawler"):
        for path in sorted((ROOT / package).rglob("*")):
            relative = str(path.relative_to(ROOT))
            if not path.is_file() or relative.startswith("extensions/backends/redis/"):
                continue
            if path.suffix == ".lua" or (path.suffix == ".py" and any(m in path.read_text() for m in LUA_MARKERS)):
                offending.append(relative)
    assert not offending, "Lua outside extensions/backends/redis:\n  " + "\n  ".join(offending)


def test_algorithm_packages_import_no_backend() -> None:
    offending = imports_from(ALGORITHM_PACKAGES + ["extensions/pipelines", "crawler"], BACKEND_PACKAGES)
    registry = [line for line in imports_from(ALGORITHM_PACKAGES, ["extensions.backends"])
                if line.split(":")[0] not in COMPOSITION_MODULES and line not in offending]
    assert not offending + registry, "backends imported by algorithms:\n  " + "\n  ".join(offending + registry)


def test_no_backend_name_is_compared_outside_the_backends() -> None:
    offending = []
    for package in ("extensions", "crawler"):
        for path in python_files(package):
            relative = str(path.relative_to(ROOT))
            if relative.startswith("extensions/backends/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(), relative)):
                if isinstance(node, ast.Compare):
                    names = {n.value for n in [node.left, *node.comparators]
                             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                    if names & BACKEND_NAMES:
                        offending.append(f"{relative}:{node.lineno} compares {sorted(names & BACKEND_NAMES)}")
    assert not offending, "backend names compared outside extensions/backends:\n  " + "\n  ".join(offending)


def test_no_import_cycle_among_extensions_modules() -> None:
    edges = import_edges("extensions")
    graph = import_graph("extensions")
    report = []
    open_cycles: set[tuple[str, ...]] = set()
    for component in cycles(graph):
        cycle = a_cycle(graph, component)
        steps = "\n".join(f"      {edges[step]}: {step[0]} imports {step[1]}" for step in zip(cycle, cycle[1:]))
        if tuple(sorted(component)) in CYCLES_PENDING:
            open_cycles.add(tuple(sorted(component)))
            continue
        report.append(f"{len(component)} modules in a cycle: {', '.join(component)}\n    e.g.\n{steps}")
    assert not set(CYCLES_PENDING) - open_cycles, "cycles gone: remove them from CYCLES_PENDING"
    assert not report, "import cycles among extensions/ modules:\n  " + "\n  ".join(report)


def test_tests_do_not_import_bench() -> None:
    offending = imports_from(["tests"], ["bench"])
    assert not offending, "tests/ imports bench/:\n  " + "\n  ".join(offending)


def test_bench_does_not_import_tests() -> None:
    offending = imports_from(["bench"], ["tests"])
    assert not offending, "bench/ imports tests/:\n  " + "\n  ".join(offending)


def test_extensions_import_neither_the_test_web_nor_the_tests() -> None:
    offending = imports_from(["extensions"], ["testweb", "tests"])
    assert not offending, "extensions/ imports test code:\n  " + "\n  ".join(offending)


def test_the_test_web_does_not_import_the_tests() -> None:
    offending = imports_from(["testweb"], ["tests"])
    assert not offending, "testweb/ imports tests/:\n  " + "\n  ".join(offending)


# -- the checker itself, on small made-up sources ---------------------------------------
def test_the_cycle_finder_reports_each_cycle_and_ignores_chains() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": set(), "f": {"g"}, "g": {"f"}}
    assert cycles(graph) == [["a", "b", "c"], ["f", "g"]]
    assert a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_count_and_type_checking_ones_do_not() -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import extensions.defaults\n"
        "if TYPE_CHECKING:\n"
        "    from extensions.frontier.scheduler import Frontier\n"
        "else:\n"
        "    import extensions.signals\n"
        "def later():\n"
        "    from . import leases, nothing_such\n"
        "    from ..store import base\n"
    )
    path = ROOT / "extensions" / "frontier" / "probe.py"
    known = {"extensions", "extensions.defaults", "extensions.signals", "extensions.frontier",
             "extensions.frontier.leases", "extensions.frontier.scheduler", "extensions.store",
             "extensions.store.base"}
    loaded = {target for imp in imports_of(path, source) for target in imp.modules(known)}
    assert loaded == {"extensions.defaults", "extensions.signals", "extensions.frontier.leases",
                      "extensions.frontier", "extensions.store.base"}
