"""Every environment variable the settings read is documented where an operator looks for it, every
setting the apps read exists, and a bad value stops the process naming the variable.

The lists are generated from the settings modules (docsmcp_site/settings/) and the apps' code
themselves, so a setting added without a line in README.md's settings table (or a section of docs/),
or an app reading a setting that no module defines, fails here, not in an operator's deployment.
"""

from __future__ import annotations

import ast
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
from docsmcp_site.settings import env
from docsmcp_site.settings.env import env_bool, env_choice, env_float, env_int, env_list, env_str

ROOT = Path(__file__).resolve().parents[2]
APPS = ("common", "corpus", "mcp_endpoint", "evals", "insights", "docsmcp_site")
# The settings modules, and the data directory's lookup they call (DOCSMCP_HOME, XDG_DATA_HOME...).
SETTINGS_SOURCES = [*sorted((ROOT / "docsmcp_site" / "settings").glob("*.py")), ROOT / "common" / "home.py"]


def variables_read(source: str) -> set[str]:
    """Names read from the environment: os.environ.get("X"), os.getenv("X"), os.environ["X"],
    "X" in os.environ, and the settings' own helpers env_bool("X", ...) / env_list("X", ...)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = ast.unparse(node.func)
            if called in ("os.environ.get", "os.getenv", "environ.get") or re.fullmatch(r"env(_\w+)?", called):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                and isinstance(node.slice, ast.Constant):
            names.add(node.slice.value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) \
                and any(ast.unparse(c) == "os.environ" for c in node.comparators):
            names.add(node.left.value)
    return {n for n in names if isinstance(n, str)}


def documented(name: str, texts: list[str]) -> bool:
    return any(re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", text) for text in texts)


def test_variables_read_finds_each_form():
    source = ('import os\nA = os.environ.get("A", "1")\nB = env_bool("B", False)\nC = os.environ["C"]\n'
              'if "D" in os.environ: pass\nE = int(os.getenv("E") or 0)\nF = env_list("F", "")\n')
    assert variables_read(source) == {"A", "B", "C", "D", "E", "F"}


def test_documented_matches_whole_names_only():
    assert documented("MCP_MAX_BATCH", ["| `MCP_MAX_BATCH` | 100 |"])
    assert not documented("MCP_MAX_BATCH", ["| `MCP_MAX_BATCH_RESPONSE_BYTES` | 4 MB |"])


def test_every_environment_variable_the_settings_read_is_documented():
    names = set().union(*(variables_read(path.read_text()) for path in SETTINGS_SOURCES))
    readme = (ROOT / "README.md").read_text()
    table = "\n".join(line for line in readme.splitlines() if line.startswith("| `"))
    texts = [table, *(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))]
    assert len(names) > 40  # the parse still sees the settings
    assert sorted(n for n in names if not documented(n, texts)) == []


def settings_read(source: str) -> set[str]:
    """Names the code reads as `settings.NAME` (django.conf's settings, the apps' one way in)."""
    return {node.attr for node in ast.walk(ast.parse(source))
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
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    assigned.setdefault(target.id, []).append(path.name)
    assert len(assigned) > 60
    assert {name: files for name, files in assigned.items() if len(files) > 1} == {}
    defaults = [f"{path.relative_to(ROOT)}: {ast.unparse(node)}" for app in APPS for path in (ROOT / app).rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and len(node.args) == 3
                and ast.unparse(node.args[0]) == "settings"]
    assert defaults == []


def settings_types(sources: list[str]) -> dict[str, type]:
    """What each setting is, read from how the settings modules make it: an env.py helper's return type
    (`X = env_int(...)`, also `env_str(...) or "default"`), a Path, another setting, or a dict of one of
    those (its items' type, for `settings.X[key]`)."""
    helpers = {name: typing.get_origin(hint) or hint for name, function in vars(env).items()
               if name.startswith("env_") and callable(function)
               for hint in [typing.get_type_hints(function)["return"]]}
    types: dict[str, type] = {}

    def made(node: ast.expr) -> type | None:
        if isinstance(node, ast.BoolOp):
            return made(node.values[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return PurePath if node.func.id == "Path" else helpers.get(node.func.id)
        if isinstance(node, ast.Name):
            return types.get(node.id)
        if isinstance(node, ast.Dict):
            items = {made(value) for value in node.values}
            return items.pop() if len(items) == 1 else None
        return None

    for source in sources:
        for node in ast.parse(source).body:
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
    for node in ast.walk(ast.parse(source)):
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
                            'L = env_list("L", "")\nB = env_bool("B", False)\nU = os.environ.get("U")\n'])
    assert types == {"N": int, "F": float, "S": str, "P": PurePath, "M": int, "T": float, "L": list, "B": bool}
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


@pytest.mark.slow
def test_a_server_with_a_bad_setting_stops_at_start_naming_it(tmp_path):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", "DOCSMCP_HOME": str(tmp_path),
                   "DOCSMCP_KEEP_BUILDS": "three"}
    environment.pop("DATABASE_URL", None)
    run = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=environment, capture_output=True,
                         text=True)
    assert run.returncode != 0
    assert "DOCSMCP_KEEP_BUILDS must be a whole number; got 'three'" in run.stderr
