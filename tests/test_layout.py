"""The layout is the architecture: these rules keep it that way.

Every import counts, the ones inside functions too: a late import that closes a cycle is still
a cycle, only hidden until the day it runs first in the wrong order.
"""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

import pytest

from tests.source_trees import parse, walk

ROOT = Path(__file__).resolve().parent.parent
# The layer order, stated once: each floor may import only the floors before it (docs/architecture.md).
# The engine is plain Python; the floor under the apps (common) is what every app shares; the site is the top.
LAYERS = ("retrieval", "common", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")
APPS = LAYERS


pytestmark = pytest.mark.usefixtures("source_trees")  # parsed once for this module


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_statements(path: Path):
    """(module, imported names) per import in the file, relative imports resolved; `import a` is (a, [])."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in walk(path.read_text(), str(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, [alias.name for alias in node.names]


def _imports(path: Path) -> set[str]:
    """Project modules imported anywhere in the file, relative imports resolved."""
    found = set()
    for base, names in _import_statements(path):
        found.add(base)
        found.update(f"{base}.{name}" for name in names)
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
        for node in walk(path.read_text(), str(path)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "django"]
    assert offenders == []


# The engine takes its options as arguments; only process set-up (boot and the allocators it tunes) and
# the environment a git child process inherits touch os.environ.
ENVIRONMENT_READERS = {"retrieval/boot.py", "retrieval/memory.py", "retrieval/ingest/git.py"}
# Outside the engine the settings read the environment (settings/env.py; build.py collects the object
# store's variables whole). The rest is not configuration: entry points naming the settings module, the data
# directory's lookup the settings call, and client configurations that copy the operator's variables
# into the environment of a server a client spawns (docs/architecture.md, "Configuration").
SITE_ENVIRONMENT_READERS = {
    "docsmcp_site/settings/env.py", "docsmcp_site/settings/build.py", "common/home.py",
    "docsmcp_site/wsgi.py", "docsmcp_site/asgi.py", "common/celery.py", "docsmcp_site/cli.py",
    "mcp_endpoint/management/commands/mcp_config.py", "mcp_endpoint/management/commands/setup.py",
    "mcp_endpoint/clients.py",  # UV_CACHE_DIR: whether a command would be spawned from uv's cache
}


def _environment_readers(*packages: str) -> set[str]:
    readers = set()
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            for node in walk(path.read_text(), str(path)):
                # unparsed only when the name can match: unparsing every attribute of the code took seconds
                if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") \
                        and ast.unparse(node) in ("os.environ", "os.getenv"):
                    readers.add(str(path.relative_to(ROOT)))
    return readers


def test_the_engine_reads_no_environment_variable():
    assert _environment_readers("retrieval") - ENVIRONMENT_READERS == set()


def test_the_apps_read_the_environment_only_through_the_settings():
    readers = _environment_readers("common", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")
    assert readers - SITE_ENVIRONMENT_READERS == set()


# Each of these packages states in its __init__ docstring what else in the project it may import.
GOVERNED = ("retrieval", "retrieval.chunkstore", "retrieval.embeddings", "retrieval.fixes", "retrieval.format",
            "retrieval.ingest", "retrieval.search", "retrieval.storage", "common", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")


def parse_allow_list(docstring: str) -> list[str] | None:
    """The backquoted names of the sentence that starts "May import:" (none for "nothing else in the
    project"); None when the docstring has no such sentence. The sentence ends at a full stop outside
    backquotes, so the reasons can follow it."""
    _, found, rest = docstring.partition("May import:")
    if not found:
        return None
    names = []
    for n, part in enumerate(rest.split("`")):
        if n % 2:
            names.append(part)
        elif part.endswith(".") or ". " in part or ".\n" in part:
            break
    return names


def _allow_lists() -> dict[str, list[str] | None]:
    lists = {}
    for package in GOVERNED:
        init = ROOT.joinpath(*package.split("."), "__init__.py")
        lists[package] = parse_allow_list(ast.get_docstring(parse(init.read_text(), str(init))) or "")
    return lists


def _targets(path: Path, modules: set[str]) -> set[str]:
    """The project modules the file imports, each as precisely as the import names it: `from a import b`
    is `a.b` when b is a module, `a` when it is a name in a."""
    found = set()
    for base, names in _import_statements(path):
        found.update(f"{base}.{name}" if f"{base}.{name}" in modules else base for name in names)
        if not names:
            found.add(base)
    return found & modules


def _owner(module: str, packages) -> str | None:
    owners = [p for p in packages if module == p or module.startswith(p + ".")]
    return max(owners, key=len) if owners else None


def allow_list_violations(imports: dict[str, set[str]], allowed: dict[str, list[str] | None]) -> list[str]:
    """`importer -> target` for each import that leaves the importer's package for a module its
    package's allow-list does not name (a name allows the module and everything under it). A
    package's own __init__ and its parents are not counted: Python imports them anyway."""
    wrong = []
    for module, targets in imports.items():
        owner = _owner(module, allowed)
        for target in targets:
            if module.startswith(target + ".") or _owner(target, allowed) == owner:
                continue
            if not any(target == a or target.startswith(a + ".") for a in allowed.get(owner) or ()):
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def stale_allow_list_entries(imports: dict[str, set[str]], allowed: dict[str, list[str] | None]) -> list[str]:
    """`package: entry` for each allow-list entry no import of the package uses any more (nor anything
    under it), so a list says what a package does import, not what it once did."""
    used: dict[str, set[str]] = {package: set() for package in allowed}
    for module, targets in imports.items():
        owner = _owner(module, allowed)
        for target in targets:
            if owner is None or module.startswith(target + ".") or _owner(target, allowed) == owner:
                continue
            used[owner].update(a for a in allowed[owner] or () if target == a or target.startswith(a + "."))
    return sorted(f"{package}: {entry}" for package, entries in allowed.items() for entry in entries or ()
                  if entry not in used[package])


def test_parse_allow_list():
    assert parse_allow_list("Why.\n\nMay import: `a.b`, `c` (its\nerrors) and `d`. Not `e`: because.") == [
        "a.b", "c", "d"]
    assert parse_allow_list("May import: nothing else in the project.") == []
    assert parse_allow_list("Plain.") is None


def test_allow_list_violations_names_the_import():
    imports = {"a.x": {"b.y", "a.z"}, "a.z": {"c"}, "b.y": {"a"}}
    assert allow_list_violations(imports, {"a": ["b"], "b": []}) == ["a.z -> c", "b.y -> a"]


def test_stale_allow_list_entries_names_the_unused_entry():
    imports = {"a.x": {"b.y", "a.z"}, "a.z": {"a.x"}, "b.y": set()}
    assert stale_allow_list_entries(imports, {"a": ["b", "c.d"], "b": []}) == ["a: c.d"]
    assert stale_allow_list_entries(imports, {"a": ["b.y.w"], "b": []}) == ["a: b.y.w"]  # a module under it


def test_every_package_states_its_allow_list():
    assert [p for p, names in _allow_lists().items() if names is None] == []


@pytest.fixture(scope="module")
def precise_imports() -> dict[str, set[str]]:
    """module -> the project modules it imports, each as precisely as the import names it (`_targets`)."""
    files = [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
    modules = {_module_name(p): p for p in files}
    return {name: _targets(path, set(modules)) - {name} for name, path in modules.items()}


def test_imports_keep_the_allow_lists(precise_imports):
    assert allow_list_violations(precise_imports, _allow_lists()) == []


def test_every_allow_list_entry_is_still_imported(precise_imports):
    """Checked the other way: an entry nothing imports any more is taken out, so the lists stay the map."""
    assert stale_allow_list_entries(precise_imports, _allow_lists()) == []


def layer_violations(edges: dict[str, dict[str, list[str]]], layers=LAYERS) -> list[str]:
    """One `module -> module` import for each floor that imports its own or a later floor in `layers`."""
    def floor(package: str) -> int:
        return layers.index(package.split(".")[0])

    return sorted(min(imports) for source, targets in edges.items() for target, imports in targets.items()
                  if source.split(".")[0] != target.split(".")[0] and floor(target) >= floor(source))


def test_layer_violations_names_an_import_up_the_order():
    edges = {"low": {"high": ["low.x -> high.y"]}, "high": {"low": ["high.y -> low"]}}
    assert layer_violations(edges, ("low", "high")) == ["low.x -> high.y"]


def test_each_floor_imports_only_the_floors_under_it(graph):
    assert layer_violations(package_graph(graph)) == []


def test_each_allow_list_names_only_floors_under_its_package():
    """The package docstrings agree with the order: no list allows a floor at or above its own."""
    wrong = [f"{package}: {entry}" for package, entries in _allow_lists().items() for entry in entries or ()
             if entry.split(".")[0] != package.split(".")[0]
             and LAYERS.index(entry.split(".")[0]) >= LAYERS.index(package.split(".")[0])]
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


# The floors of the project: each top-level package, and each of the engine's subpackages (the
# engine's own top-level modules, errors.py, boot.py and the like, are the node `retrieval`).
PACKAGES = ("retrieval", "retrieval.chunkstore", "retrieval.embeddings", "retrieval.fixes", "retrieval.format",
            "retrieval.ingest", "retrieval.search", "retrieval.storage", "common", "corpus", "mcp_endpoint", "evals", "insights",
            "docsmcp_site")


def package_graph(graph: dict[str, set[str]], packages=PACKAGES) -> dict[str, dict[str, list[str]]]:
    """package -> {package it imports: the `module -> module` imports that make the edge}."""
    edges: dict[str, dict[str, list[str]]] = {package: {} for package in packages}
    for module, targets in graph.items():
        source = _owner(module, packages)
        for target in targets:
            owner = _owner(target, packages)
            if source and owner and owner != source and not module.startswith(target + "."):
                edges[source].setdefault(owner, []).append(f"{module} -> {target}")
    return edges


def test_package_graph_names_the_imports_behind_an_edge():
    graph = {"a.x": {"b.y"}, "a.z": {"b"}, "b.y": {"b"}, "b": set()}
    assert package_graph(graph, ("a", "b")) == {"a": {"b": ["a.x -> b.y", "a.z -> b"]}, "b": {}}


def test_no_cycle_between_packages(graph):
    """A loop between floors, even through an import inside a function, means neither can be read,
    tested or moved without the other."""
    edges = package_graph(graph)
    cycles = find_cycles({package: set(targets) for package, targets in edges.items()})
    # each cycle with one import per step, so the failure says where to cut
    evidence = [f"{cycle}: " + "; ".join(min(edges[a][b]) for a, b in pairwise(cycle.split(" -> ")))
                for cycle in cycles]
    assert evidence == []




def test_every_surface_checks_api_keys_through_one_function():
    """The REST API, /mcp/, llms.txt and /health/ each call corpus.apikeys.authenticate: nothing installs a
    key check at start, so the one path a key takes can be read from the imports."""
    surfaces, strays = set(), []
    for path in [p for app in APPS[1:] for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]:
        source = path.read_text()
        if "authenticate" not in source:
            continue
        imported = {name for base, names in _import_statements(path) if base == "corpus.apikeys" for name in names}
        for node in walk(source, str(path)):
            if not isinstance(node, ast.Call):
                continue
            function = node.func
            if isinstance(function, ast.Name) and function.id == "authenticate" and "authenticate" in imported:
                surfaces.add(_module_name(path))
            elif (isinstance(function, ast.Attribute) and function.attr == "authenticate") or (
                    isinstance(function, ast.Name) and function.id == "authenticate"):
                strays.append(f"{_module_name(path)}:{node.lineno} {ast.unparse(function)}")
    assert strays == []
    assert surfaces == {"corpus.api.auth", "mcp_endpoint.transport", "mcp_endpoint.llmstxt", "mcp_endpoint.health"}
