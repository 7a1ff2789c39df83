"""Every environment variable the settings read is documented where an operator looks for it.

The list is generated from docsmcp_site/settings.py itself, so a setting added without a line in
README.md's settings table (or a section of docs/) fails here, not in an operator's deployment.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    names = variables_read((ROOT / "docsmcp_site" / "settings.py").read_text())
    readme = (ROOT / "README.md").read_text()
    table = "\n".join(line for line in readme.splitlines() if line.startswith("| `"))
    texts = [table, *(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))]
    assert len(names) > 40  # the parse still sees the settings
    assert sorted(n for n in names if not documented(n, texts)) == []
