"""The layout is the architecture: these rules keep it that way.

Every import counts, the ones inside functions too: a late import that closes a cycle is still
a cycle, only hidden until the day it runs first in the wrong order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("retrieval", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Project modules imported anywhere in the file, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in APPS}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
    modules = {_module_name(p): p for p in files}
    edges = {}
    for name, path in modules.items():
        # `from pkg import mod` names a module; `from mod import func` names the module only
        edges[name] = {target for target in _imports(path) if target in modules and target != name}
    return edges


def test_nothing_in_retrieval_imports_django():
    offenders = []
    for path in (ROOT / "retrieval").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "django"]
    assert offenders == []


@pytest.mark.parametrize(("package", "forbidden"), [
    ("retrieval", ("corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")),
    ("retrieval.ingest", ("retrieval.search", "retrieval.fixes", "retrieval.chunkstore")),
    ("retrieval.embeddings", ("retrieval.search", "retrieval.fixes", "retrieval.chunkstore", "retrieval.ingest")),
    ("retrieval.fixes", ("retrieval.search", "retrieval.chunkstore")),
    ("retrieval.storage", ("retrieval.search", "retrieval.fixes", "retrieval.chunkstore", "retrieval.ingest",
                           "retrieval.embeddings")),
    ("retrieval.search", ("retrieval.fixes", "retrieval.chunkstore", "retrieval.ingest.build",
                          "retrieval.ingest.sources")),
    ("corpus", ("mcp_endpoint", "evals", "insights")),
    # insights reads corpus and evals; only the site's URL and API assembly may import it
    ("evals", ("insights",)),
    ("mcp_endpoint", ("insights",)),
    ("insights", ("mcp_endpoint", "docsmcp_site.urls", "docsmcp_site.api.assembly")),
])
def test_dependencies_point_one_way(graph, package, forbidden):
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() if m == package or m.startswith(package + ".")
                   for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden))
    assert wrong == []


def find_cycles(graph: dict[str, set[str]]) -> list[str]:
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_find_cycles_reports_a_late_import_cycle():
    assert find_cycles({"a.services": {"a.tasks"}, "a.tasks": {"a.services"}, "b": {"a.tasks"}}) == [
        "a.services -> a.tasks -> a.services"]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles(graph):
    assert find_cycles(graph) == []
