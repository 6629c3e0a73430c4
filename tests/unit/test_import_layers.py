"""Imports run one way: commands -> jobs -> Spark glue and metrics -> the pure windowing core.

Every module of ``trending`` and ``connectors`` is parsed (not imported), and every import it
holds counts: at module level, inside a function, under ``if TYPE_CHECKING:``, and
``importlib.import_module`` of a literal name. The rules:

* ``trending/windows``, the pure core, imports nothing else of the project, and its modules
  import each other without a cycle;
* the Spark glue (``trending/spark``) and ``trending/metrics.py`` import no job and no command:
  a job hands them what they need (its metrics observer, its settings);
* ``connectors`` (Kafka and Avro I/O) imports no job, no command and no Spark glue;
* the jobs (``trending/jobs``, their life cycle in :mod:`trending.jobs.runtime` included)
  import no command: the command line builds a job's settings and hands them over.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("trending", "connectors")
CORE = "trending.windows"
# Pure helpers outside the core that it already uses; each must import nothing of the project.
CORE_MAY_IMPORT = ("trending.durations",)  # by trending.windows.temporal.spec
GLUE = ("trending.spark", "trending.metrics")
JOBS = ("trending.jobs", "trending.commands")


@dataclass(frozen=True)
class Import:
    """``importer`` imports ``module`` (absolute; a submodule when ``from P import m`` names one)
    on line ``line``."""

    importer: str
    module: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer} (line {self.line}) imports {self.module}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> dict[str, Path]:
    """Every module of the packages, by its dotted name."""
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


MODULES = source_files()


def within(module: str, *prefixes: str) -> bool:
    """``module`` is one of ``prefixes`` or inside one of them."""
    return any(module == p or module.startswith(f"{p}.") for p in prefixes)


def imports_of(name: str, path: Path) -> Iterator[Import]:
    """Every import of the module ``name``, wherever it is in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield Import(name, sub if sub in MODULES else base, node.lineno)
        elif _is_import_module(node):
            assert isinstance(node, ast.Call)
            literal = node.args[0]
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
                yield Import(name, literal.value, node.lineno)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def _is_import_module(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return called in ("import_module", "__import__")


ALL_IMPORTS = sorted(
    {found for name, path in MODULES.items() for found in imports_of(name, path)},
    key=lambda found: (found.importer, found.line, found.module),
)


def internal(module: str) -> str | None:
    """The project module an import loads (its longest known prefix), None if not ours."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` that hold a cycle (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_is_parsed() -> None:
    assert {"trending.windows.replay", "trending.metrics", "connectors.kafka"} <= MODULES.keys()
    assert any(within(i.importer, CORE) for i in ALL_IMPORTS)


def test_the_core_imports_nothing_else_of_the_project() -> None:
    outside = [
        str(i)
        for i in ALL_IMPORTS
        if within(i.importer, CORE)
        and within(i.module, *PACKAGES)
        and not within(i.module, CORE, *CORE_MAY_IMPORT)
    ]
    assert outside == []


def test_what_the_core_may_import_imports_nothing_of_the_project() -> None:
    inward = [
        str(i)
        for i in ALL_IMPORTS
        if within(i.importer, *CORE_MAY_IMPORT) and within(i.module, *PACKAGES)
    ]
    assert inward == []


def test_the_core_has_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for found in ALL_IMPORTS:
        target = internal(found.module)
        if within(found.importer, CORE) and target is not None and within(target, CORE):
            graph.setdefault(found.importer, set()).add(target)
    assert cycles(graph) == []


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (GLUE, JOBS),
        (("connectors",), (*JOBS, "trending.spark")),
        (("trending.jobs",), ("trending.commands",)),
    ],
    ids=["spark-and-metrics", "connectors", "jobs"],
)
def test_lower_layers_import_no_higher_one(
    layer: tuple[str, ...], forbidden: tuple[str, ...]
) -> None:
    upward = [
        str(i) for i in ALL_IMPORTS if within(i.importer, *layer) and within(i.module, *forbidden)
    ]
    assert upward == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_command_line_holds_no_life_cycle() -> None:
    """Signals, the wait for the query and Spark's start live in :mod:`trending.jobs.runtime`."""
    run = (ROOT / "trending" / "commands" / "run.py").read_text(encoding="utf-8")
    tree = ast.parse(run)
    imported = {
        i.module for i in imports_of("trending.commands.run", MODULES["trending.commands.run"])
    }
    assert not {"signal", "threading"} & imported
    assert "build_session" not in run and "awaitTermination" not in run
    assert any(isinstance(n, ast.FunctionDef) and n.name == "run_job" for n in ast.walk(tree))
