"""Every environment variable the settings read is in the registry (docsmcp_site/settings/registry.py) and
nothing else is, docs/settings.md is what the registry gives, every setting the apps read exists, and a bad
value stops the process naming the variable.

The lists are generated from the settings modules (docsmcp_site/settings/) and the apps' code themselves,
so a variable read without a registry entry, an entry no module reads, a page not regenerated, or an app
reading a setting that no module defines, fails here, not in an operator's deployment.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import typing
from pathlib import Path, PurePath

import pytest
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

import docsmcp_site.settings as site_settings
from docsmcp_site.settings.env import env, env_bool, env_choice, env_float, env_int, env_list, env_str
from docsmcp_site.settings.registry import BY_NAME, COMPUTED, KINDS, SECTIONS, SETTINGS
from tests.source_trees import parse, walk

# The module (the package's star imports bind `env` to the function).
env_module = importlib.import_module("docsmcp_site.settings.env")
ROOT = Path(__file__).resolve().parents[2]

def _script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


settings_docs = _script(ROOT / "scripts" / "settings_docs.py")
APPS = ("common", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")
SETTINGS_DIR = ROOT / "docsmcp_site" / "settings"
# Only files these find can hold what the tests below look for; parsing every other one cost seconds.
PREFIXED = re.compile(r"(DOCSMCP|MCP|CITELOOM)_")
READS_ENVIRONMENT = re.compile(r"environ|getenv|\b(env|given)\(")


pytestmark = pytest.mark.usefixtures("source_trees")  # parsed once for this module


def variables_read(source: str) -> set[str]:
    """Names read from the environment: os.environ.get("X"), os.getenv("X"), os.environ["X"],
    "X" in os.environ, environ.get("X"), `name == "X"` over os.environ's items, and env("X")."""
    names = set()
    for node in walk(source):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = ast.unparse(node.func)
            if called in ("os.environ.get", "os.getenv", "environ.get", "env", "given"):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                and isinstance(node.slice, ast.Constant):
            names.add(node.slice.value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) \
                and any(ast.unparse(c) == "os.environ" for c in node.comparators):
            names.add(node.left.value)
        elif isinstance(node, ast.DictComp) and "os.environ" in ast.unparse(node.generators[0].iter):
            names |= {c.value for c in ast.walk(node.generators[0]) if isinstance(c, ast.Constant)
                      and isinstance(c.value, str) and c.value.isupper() and not c.value.endswith("_")}
    return {n for n in names if isinstance(n, str)}


def test_variables_read_finds_each_form():
    source = ('import os\nA = os.environ.get("A", "1")\nB = env("B")\nC = os.environ["C"]\n'
              'if "D" in os.environ: pass\nE = int(os.getenv("E") or 0)\nF = env("F", 3)\n'
              'G = {k: v for k, v in os.environ.items() if k == "G" or k.startswith("AWS_")}\n')
    assert variables_read(source) == {"A", "B", "C", "D", "E", "F", "G"}


def test_the_registry_holds_exactly_the_variables_the_settings_read():
    """Both ways: a variable read without an entry is undocumented, an entry nothing reads documents a
    setting that does nothing."""
    read = set().union(*(variables_read(path.read_text()) for path in SETTINGS_DIR.glob("*.py")
                         if path.name not in ("env.py", "registry.py")))
    outside = {s.name for s in SETTINGS if s.read_by}
    for path in {s.read_by for s in SETTINGS if s.read_by}:
        found = variables_read((ROOT / path).read_text())
        assert {s.name for s in SETTINGS if s.read_by == path} <= found, path
    assert len(read) > 80  # the parse still sees the settings
    assert sorted(read - outside - BY_NAME.keys()) == []
    assert sorted(BY_NAME.keys() - read - outside) == []
    assert len(BY_NAME) == len(SETTINGS)  # no name twice


def test_the_settings_modules_read_through_env_alone():
    """env(NAME) is the one way in: a module calling env_int("X", 3) itself would repeat a default and read a
    variable the registry may not hold."""
    imported = {alias.name for path in SETTINGS_DIR.glob("*.py") if path.name != "env.py"
                for node in walk(path.read_text())
                if isinstance(node, ast.ImportFrom) and node.module == "docsmcp_site.settings.env"
                for alias in node.names}
    assert imported == {"env", "given"}


def test_every_entry_is_complete_and_its_default_has_its_type():
    python = {"str": str, "int": int, "float": (int, float), "bool": bool, "list": tuple, "choice": str,
              "path": str}
    for setting in SETTINGS:
        assert setting.kind in KINDS and setting.section in SECTIONS and setting.help, setting.name
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", setting.name), setting.name
        if setting.default is COMPUTED:
            assert setting.shown, f"{setting.name}: a computed default says what it is"
        else:
            assert isinstance(setting.default, python[setting.kind]), setting.name
        if setting.kind == "choice":
            assert setting.default in setting.choices or setting.default is COMPUTED, setting.name
        if setting.kind in ("int", "float") and setting.default is not COMPUTED:
            assert setting.minimum <= setting.default <= (setting.maximum or setting.default), setting.name


def test_the_embedding_providers_offered_are_the_engines():
    from retrieval.embeddings import PROVIDERS

    assert set(BY_NAME["DOCSMCP_EMBEDDING_PROVIDER"].choices) == set(PROVIDERS)


def test_the_variables_handed_to_a_spawned_server_are_registered():
    from mcp_endpoint.management.commands.mcp_config import FORWARDED_ENV

    assert sorted(set(FORWARDED_ENV) - BY_NAME.keys()) == []


# Names of the project's prefixes that are not the server's settings: the variable a client's configuration
# reads an API key from (mcp_endpoint/client_files.py), and the directory `serve` hands its gunicorn.
NOT_SETTINGS = {"DOCSMCP_API_KEY", "DOCSMCP_SERVE_WARM_DIR"}


def test_every_variable_of_the_projects_prefixes_named_in_the_code_is_registered():
    """A DOCSMCP_*, MCP_* or CITELOOM_* name anywhere in the code (an environment read outside the settings,
    an error message telling the operator what to raise) is a setting of the registry."""
    sources = {path: path.read_text() for app in (*APPS, "retrieval") for path in (ROOT / app).rglob("*.py")}
    named = {node.value: str(path.relative_to(ROOT)) for path, source in sources.items() if PREFIXED.search(source)
             for node in walk(source)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and re.fullmatch(r"(DOCSMCP|MCP|CITELOOM)_[A-Z0-9_]+", node.value)}
    assert len(named) > 20  # the parse still sees the code
    assert {name: path for name, path in named.items() if name not in BY_NAME and name not in NOT_SETTINGS} == {}
    assert named.keys() >= NOT_SETTINGS  # no stale exception


def test_every_variable_the_docs_name_exists():
    """README.md and docs/ name only variables that something reads: a setting, a variable of the test
    suite, a client's or serve's own; a renamed or removed setting left in prose fails here."""
    sources = [path.read_text() for path in (ROOT / "tests").rglob("*.py")]
    read_by_tests = set().union(*(variables_read(source) for source in sources if READS_ENVIRONMENT.search(source)))
    known = BY_NAME.keys() | NOT_SETTINGS | read_by_tests | {name for name in dir(site_settings) if name.isupper()}
    named = {name: path.name for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for name in re.findall(r"(?<![A-Za-z0-9_])((?:DOCSMCP|MCP|CITELOOM)_[A-Z0-9_]*[A-Z0-9])(?![A-Za-z0-9_])",
                                    path.read_text())}
    assert {name: path for name, path in named.items() if name not in known} == {}


def test_the_settings_page_is_what_the_registry_gives():
    """docs/settings.md is generated (scripts/settings_docs.py): edit the registry or the checks, then
    regenerate; a hand edit or a new setting without the page fails here."""
    assert settings_docs.PAGE.read_text() == settings_docs.page()


def test_the_settings_page_lists_every_variable_and_check_once():
    from docsmcp_site.checks import RULES

    page = settings_docs.page()
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", page, re.M)
    assert sorted(rows) == sorted(BY_NAME)
    assert sorted(re.findall(r"^\| `(docsmcp\.[EW]\d{3})` \|", page, re.M)) == sorted(r.id for r in RULES)
    assert "docs/settings.md" in (ROOT / "README.md").read_text()


def test_settings_docs_check_fails_on_a_stale_page_and_writing_mends_it(tmp_path, capsys):
    stale = tmp_path / "settings.md"
    stale.write_text("# Settings\n")
    assert settings_docs.main(["--check"], stale) == 1
    assert "run `.venv/bin/python scripts/settings_docs.py`" in capsys.readouterr().err
    assert settings_docs.main([], stale) == 0
    assert settings_docs.main(["--check"], stale) == 0
    assert stale.read_text() == settings_docs.page()


@pytest.mark.slow
def test_settings_docs_runs_from_a_checkout(tmp_path):
    run = subprocess.run([sys.executable, "scripts/settings_docs.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "DOCSMCP_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr


def settings_read(source: str) -> set[str]:
    """Names the code reads as `settings.NAME` (django.conf's settings, the apps' one way in)."""
    return {node.attr for node in walk(source)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "settings"
            and node.attr.isupper()}


def test_settings_read_finds_attribute_reads():
    assert settings_read("from django.conf import settings\nx = settings.MCP_MAX_BATCH + len(settings.lower)\n") == {
        "MCP_MAX_BATCH"}


def test_every_setting_the_apps_read_is_defined_once_in_the_settings():
    read = set().union(*(settings_read(path.read_text()) for app in APPS for path in (ROOT / app).rglob("*.py")
                         if "migrations" not in path.parts))
    assert len(read) > 60  # the parse still sees the apps
    assert sorted(name for name in read if not hasattr(site_settings, name) and not hasattr(global_settings, name)) == []


def test_each_setting_is_assigned_in_one_settings_module_and_no_app_repeats_a_default():
    assigned: dict[str, list[str]] = {}
    for path in (ROOT / "docsmcp_site" / "settings").glob("*.py"):
        for node in parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    assigned.setdefault(target.id, []).append(path.name)
    assert len(assigned) > 60
    assert {name: files for name, files in assigned.items() if len(files) > 1} == {}
    defaults = [f"{path.relative_to(ROOT)}: {ast.unparse(node)}" for app in APPS for path in (ROOT / app).rglob("*.py")
                for node in walk(path.read_text())
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and len(node.args) == 3
                and ast.unparse(node.args[0]) == "settings"]
    assert defaults == []


def settings_types(sources: list[str]) -> dict[str, type]:
    """What each setting is, read from how the settings modules make it: env("X")'s type in the registry,
    an env.py helper's return type (`X = env_int(...)`, also `env_str(...) or "default"`), a Path, another
    setting, or a dict of one of those (its items' type, for `settings.X[key]`)."""
    helpers = {name: typing.get_origin(hint) or hint for name, function in vars(env_module).items()
               if name.startswith("env_") and callable(function)
               for hint in [typing.get_type_hints(function)["return"]]}
    kinds = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "choice": str, "path": PurePath}
    types: dict[str, type] = {}

    def made(node: ast.expr) -> type | None:
        if isinstance(node, ast.BoolOp):
            return made(node.values[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "env" and node.args and isinstance(node.args[0], ast.Constant):
                return kinds[BY_NAME[node.args[0].value].kind]
            return PurePath if node.func.id == "Path" else helpers.get(node.func.id)
        if isinstance(node, ast.Name):
            return types.get(node.id)
        if isinstance(node, ast.Dict):
            items = {made(value) for value in node.values}
            return items.pop() if len(items) == 1 else None
        return None

    for source in sources:
        for node in parse(source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and (kind := made(node.value)) is not None:
                types[node.targets[0].id] = kind
    return types


CONVERSIONS = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "Path": PurePath}


def retyped(source: str, types: dict[str, type]) -> list[str]:
    """Reads that convert a setting to the type it already has (`int(settings.X)`, `str(settings.X or "")`,
    `float(settings.X[key])`) or fall back to an empty value it already gives (`settings.X or 0`)."""
    def typed(node: ast.expr) -> type | None:
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "settings":
            return types.get(node.attr)
        return None

    found = []
    for node in walk(source):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            argument = node.args[0]
            inner = argument.values[0] if isinstance(argument, ast.BoolOp) else argument
            if (kind := typed(inner)) is not None and kind is CONVERSIONS.get(node.func.id):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and typed(node.values[0]) is not None:
            fallback = node.values[1]
            if isinstance(fallback, (ast.List, ast.Tuple, ast.Dict)) and not ast.literal_eval(fallback) or (
                    isinstance(fallback, ast.Constant) and fallback.value is not None and not fallback.value):
                found.append(ast.unparse(node))
    return found


def test_retyped_finds_each_form():
    types = settings_types(['N = env_int("N", 1)\nF = env_float("F", 1)\nS = env_str("S") or "x"\n'
                            'P = Path(env_str("P") or "/tmp")\nM = N\nT = {"a": env_float("A", 1)}\n'
                            'L = env_list("L", "")\nB = env_bool("B", False)\nU = os.environ.get("U")\n'
                            'R = env("MCP_MAX_BATCH")\nQ = env("DOCSMCP_GIT_CACHE_DIR", HOME)\n'])
    assert types == {"N": int, "F": float, "S": str, "P": PurePath, "M": int, "T": float, "L": list, "B": bool,
                     "R": int, "Q": PurePath}
    source = ('from django.conf import settings\na = int(settings.N or 0)\nb = float(settings.T["a"])\n'
              'c = settings.S or ""\nd = settings.L or ()\ne = Path(settings.P)\nf = bool(settings.B)\n'
              'g = settings.M or 0\n'
              'ok = (str(settings.N), int(settings.U), settings.S or None, settings.N or 1, float(settings.N),\n'
              '      settings.S or settings.N, str(settings.P / "x"))\n')
    assert sorted(retyped(source, types)) == ["Path(settings.P)", "bool(settings.B)", "float(settings.T['a'])",
                                              "int(settings.N or 0)", "settings.L or ()", "settings.M or 0",
                                              "settings.N or 0", "settings.S or ''"]


def test_no_app_converts_a_setting_to_the_type_it_already_has():
    """A setting is parsed and typed once, in its settings module: converting it again where it is read would
    hide a test or a settings change that gave it the wrong type."""
    types = settings_types([path.read_text() for path in (ROOT / "docsmcp_site" / "settings").glob("*.py")])
    assert {"MCP_MAX_BATCH", "DOCSMCP_HEADER_TIMEOUT", "MCP_AUTH_REQUIRED", "DOCSMCP_INDEX_CACHE_DIR",
            "CITELOOM_TIMEOUTS", "DATA_UPLOAD_MAX_MEMORY_SIZE"} <= types.keys()  # the parse still sees the settings
    found = [f"{path.relative_to(ROOT)}: {read}" for app in APPS for path in (ROOT / app).rglob("*.py")
             if "migrations" not in path.parts for read in retyped(path.read_text(), types)]
    assert found == []


def test_a_number_or_switch_left_empty_means_its_default_and_a_string_left_empty_is_a_value(monkeypatch):
    for name in ("N", "F", "B", "C", "S", "L"):
        monkeypatch.setenv(name, "")
    assert (env_int("N", 3), env_float("F", 1.5), env_bool("B", True), env_choice("C", "full", ("full", "off"))) == (
        3, 1.5, True, "full")
    assert (env_str("S", "default"), env_list("L", "a,b")) == ("", [])
    monkeypatch.setenv("B", " Off ")
    monkeypatch.setenv("L", " a, ,b ")
    assert (env_bool("B", True), env_list("L", "")) == (False, ["a", "b"])


@pytest.mark.parametrize(("read", "value", "message"), [
    (lambda: env_int("DOCSMCP_TEST_VALUE", 3), "three", "DOCSMCP_TEST_VALUE must be a whole number; got 'three'"),
    (lambda: env_float("DOCSMCP_TEST_VALUE", 1.0), "1,5", "DOCSMCP_TEST_VALUE must be a number; got '1,5'"),
    (lambda: env_bool("DOCSMCP_TEST_VALUE", False), "maybe",
     "DOCSMCP_TEST_VALUE must be one of 1, true, yes, on, 0, false, no, off; got 'maybe'"),
    (lambda: env_choice("DOCSMCP_TEST_VALUE", "full", ("full", "off")), "some", "DOCSMCP_TEST_VALUE must be full or off; got 'some'"),
])
def test_a_value_that_does_not_parse_is_refused_naming_the_variable(monkeypatch, read, value, message):
    monkeypatch.setenv("DOCSMCP_TEST_VALUE", value)
    with pytest.raises(ImproperlyConfigured) as refused:
        read()
    assert str(refused.value) == message


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("MCP_MAX_BATCH", "", 20), ("MCP_MAX_BATCH", " 7 ", 7), ("DOCSMCP_GIT_TIMEOUT", "2.5", 2.5),
    ("MCP_AUTH_REQUIRED", "Yes", True), ("DOCSMCP_QUERY_LOG", "NO-TEXT", "no-text"), ("DOCSMCP_QUERY_LOG", "", "full"),
    ("MCP_ALLOWED_ORIGINS", "", []), ("MCP_ALLOWED_ORIGINS", "https://a.example, *", ["https://a.example", "*"]),
    ("MCP_SERVER_HOST", "", ""), ("DOCSMCP_FIX_MODEL", "", "gpt-4o-mini"), ("DOCSMCP_EMBEDDING_PROVIDER", "", "none"),
])
def test_env_reads_a_variable_by_its_registry_type_and_default(monkeypatch, name, value, expected):
    monkeypatch.setenv(name, value)
    assert env(name) == expected


def test_env_with_no_variable_gives_the_registry_default(monkeypatch):
    for name in ("MCP_ALLOWED_ORIGINS", "MCP_SERVER_PORT", "DOCSMCP_OAUTH_SERVER"):
        monkeypatch.delenv(name, raising=False)
    assert env("MCP_ALLOWED_ORIGINS") == list(BY_NAME["MCP_ALLOWED_ORIGINS"].default)
    assert (env("MCP_SERVER_PORT"), env("DOCSMCP_OAUTH_SERVER")) == (8001, True)


def test_a_computed_default_is_handed_in_and_only_there(monkeypatch, tmp_path):
    monkeypatch.delenv("DOCSMCP_GIT_CACHE_DIR", raising=False)
    assert env("DOCSMCP_GIT_CACHE_DIR", tmp_path / "git") == tmp_path / "git"
    monkeypatch.setenv("DOCSMCP_GIT_CACHE_DIR", "")
    assert env("DOCSMCP_GIT_CACHE_DIR", tmp_path / "git") == tmp_path / "git"
    with pytest.raises(TypeError, match="computed"):
        env("DOCSMCP_GIT_CACHE_DIR")
    with pytest.raises(TypeError, match="computed"):
        env("MCP_MAX_BATCH", 5)
    with pytest.raises(KeyError):
        env("DOCSMCP_NOT_A_SETTING")


@pytest.mark.parametrize(("name", "value", "message"), [
    ("MCP_MAX_BATCH", "-1", "MCP_MAX_BATCH must be at least 0; got -1"),
    ("MCP_SERVER_PORT", "70000", "MCP_SERVER_PORT must be between 1 and 65535; got 70000"),
    ("DOCSMCP_INSIGHTS_LOW_SCORE", "1.5", "DOCSMCP_INSIGHTS_LOW_SCORE must be between 0 and 1; got 1.5"),
    ("MCP_SERVER_PORT", "http", "MCP_SERVER_PORT must be a whole number; got 'http'"),
    ("DOCSMCP_EMBEDDING_PROVIDER", "openia", "DOCSMCP_EMBEDDING_PROVIDER must be none or hash or openai or local; "
                                             "got 'openia'"),
])
def test_env_refuses_a_value_out_of_bounds_naming_the_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured) as refused:
        env(name)
    assert str(refused.value) == message


@pytest.mark.slow
def test_a_server_with_a_bad_setting_stops_at_start_naming_it(tmp_path):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", "DOCSMCP_HOME": str(tmp_path),
                   "DOCSMCP_KEEP_BUILDS": "three"}
    environment.pop("DATABASE_URL", None)
    run = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=environment, capture_output=True,
                         text=True)
    assert run.returncode != 0
    assert "DOCSMCP_KEEP_BUILDS must be a whole number; got 'three'" in run.stderr
