"""The code's shape, checked: no import cycle, no module too long to read in one sitting, and the layers'
direction (connectors build on the runtime, never the other way).

Imports are read from the source (every `import`, including those inside functions and under
TYPE_CHECKING): an import moved into a function to dodge a cycle at start-up is still a cycle in the design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ingest", "connectors", "dags")
MAX_LINES = 800


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The project modules `name` (at `path`) imports anywhere in its text. `from pkg import sub` is an import
    of the module `pkg.sub` (not of `pkg`, whose `__init__` every submodule import runs anyway)."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(name, path, found) for name, path in found.items()}


def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path):
    (tmp_path / "ingest" / "pkg").mkdir(parents=True)
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    (tmp_path / "ingest" / "__init__.py").write_text("")
    (tmp_path / "ingest" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "ingest" / "pkg" / "a.py").write_text("from ingest.pkg import b\n")
    (tmp_path / "ingest" / "pkg" / "b.py").write_text("def f():\n    from . import c\n")
    (tmp_path / "ingest" / "pkg" / "c.py").write_text("import typing\nif typing.TYPE_CHECKING:\n"
                                                      "    from ingest.pkg.a import X\n")
    (tmp_path / "ingest" / "pkg" / "d.py").write_text("from ingest.pkg import a\n")  # on the path, not in it
    found = modules(tmp_path)
    graph = {name: imported(name, path, found) for name, path in found.items()}
    assert cycles(graph) == [["ingest.pkg.a", "ingest.pkg.b", "ingest.pkg.c"]]


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "modules importing each other (directly or through others): " + "; ".join(
        " <-> ".join(group) for group in found)


def test_the_runtime_never_imports_a_connector():
    graph = import_graph()
    back = sorted(f"{m} imports {d}" for m, deps in graph.items() if m.startswith("ingest") for d in deps
                  if d.startswith("connectors"))
    assert not back, back


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_longer_than_a_sitting(package):
    long = {str(path.relative_to(ROOT)): n for name, path in modules().items() if name.split(".")[0] == package
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
