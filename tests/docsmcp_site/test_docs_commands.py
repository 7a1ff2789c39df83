"""Every command line in README.md's and docs/*.md's code blocks runs a command that exists, with options
it has (and values its choices allow), and every URL of a local docsmcp server names the port it
listens on by default unless the same block starts it on another.

docs/BENCHMARKS.md is left out: it records the command lines that ran when each number was measured.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import get_commands, load_command_class

from docsmcp_site.commands import ALIASES

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "BENCHMARKS.md")]
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console", "ini"}
# What a shell line may put between commands; the words after one start a new command.
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}
# Words the CLI answers itself (docsmcp_site/cli.py), not Django.
CLI_WORDS = {"--help", "-h", "--version", "-V", "help", "django-help"}
# The MCP Inspector's own options, which it takes after the server command it starts (docs/clients.md).
INSPECTOR_OPTIONS = {"--method", "--tool-name", "--tool-arg", "--transport", "--header", "--cli"}
LOCAL_URL = re.compile(r"https?://(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):(\d+)")


@dataclass(frozen=True)
class Invocation:
    where: str
    command: str
    args: list[str]


def code_blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, text, first line number) of each fenced block."""
    blocks, lines, language, start, inside = [], [], "", 0, False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            if inside:
                blocks.append((language, "\n".join(lines), start))
            else:
                language, lines, start = line.strip()[3:].strip(), [], number + 1
            inside = not inside
            continue
        if inside:
            lines.append(line)
    return blocks


def invocations(path: Path) -> list[Invocation]:
    found = []
    for language, text, start in code_blocks(path):
        if language not in SHELL_LANGUAGES:
            continue
        for offset, line in enumerate(text.replace("\\\n", " ").splitlines()):
            line = line.split(" #", 1)[0].strip()
            if line.startswith("#") or ("manage.py" not in line and "docsmcp" not in line):
                continue
            try:
                words = shlex.split(line.replace("ExecStart=", ""))
            except ValueError:
                continue
            found += _commands(words, f"{_shown(path)}:{start + offset}")
    return found


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _commands(words: list[str], where: str) -> list[Invocation]:
    """The manage.py or docsmcp commands a shell line runs, each with its words up to the next separator."""
    found, at_start = [], True
    if "@modelcontextprotocol/inspector" in words:
        words = [w for i, w in enumerate(words) if w not in INSPECTOR_OPTIONS
                 and not (i and words[i - 1] in INSPECTOR_OPTIONS - {"--cli"})]
    for i, word in enumerate(words):
        runs = word.endswith("manage.py") or (at_start and (word == "docsmcp" or word.endswith("/docsmcp")))
        if runs and i + 1 < len(words):
            rest = []
            for arg in words[i + 1:]:
                if arg in SEPARATORS or arg.startswith((">", "2>")):
                    break
                rest.append(arg)
            if rest and (re.fullmatch(r"[a-z][a-z_-]*", rest[0]) or rest[0] in CLI_WORDS):
                found.append(Invocation(where, rest[0], rest[1:]))
        at_start = word in SEPARATORS or (at_start and re.fullmatch(r"[A-Z_]+=\S*", word) is not None)
    return found


ALL = [call for path in DOCS for call in invocations(path)]


def _parser(name: str) -> argparse.ArgumentParser:
    return load_command_class(get_commands()[name], name).create_parser("docsmcp", name)


def _actions(parser: argparse.ArgumentParser, sub: str | None) -> dict[str, argparse.Action]:
    """Option string -> action, in the parser and the sub-command's parser named `sub`."""
    found = {o: a for a in parser._actions for o in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and sub in action.choices:
            found |= {o: a for a in action.choices[sub]._actions for o in a.option_strings}
    return found


def _placeholder(value: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_]*|<.*>|\$\S+|\.\.\.|.*\.\.\.", value.strip("[]")))


def test_the_docs_show_command_lines():
    assert len(ALL) > 40 and {c.command for c in ALL} >= {"serve", "setup", "build_index", "run_eval"}


@pytest.mark.parametrize("call", ALL, ids=[f"{c.where} {c.command}" for c in ALL])
def test_every_documented_command_line_names_a_command_and_options_that_exist(call):
    if call.command in CLI_WORDS:
        return
    name = ALIASES.get(call.command, call.command)
    assert name in get_commands(), f"{call.where}: `{call.command}` is no docsmcp command"
    parser = _parser(name)
    positionals = [a for a in call.args if not a.startswith(("-", "["))]
    actions = _actions(parser, positionals[0] if positionals else None)
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subparsers and positionals and not _placeholder(positionals[0]):
        assert positionals[0] in subparsers[0].choices, f"{call.where}: {name} has no `{positionals[0]}`"
    for i, word in enumerate(call.args):
        option = word.strip("[]").split("=", 1)[0]
        if not option.startswith("--"):
            continue
        assert option in actions, f"{call.where}: `{name}` has no option {option}"
        action = actions[option]
        value = word.split("=", 1)[1] if "=" in word else call.args[i + 1] if i + 1 < len(call.args) else None
        if action.choices and value and not _placeholder(value):
            for choice in value.strip("[]").split("|"):
                assert choice in action.choices, f"{call.where}: {option} {choice} is not one of {action.choices}"


def wrong_ports(path: Path, default: str) -> list[str]:
    """Local server URLs on another port than `default`, unless the code block they are in starts the server
    on that port, or the URL is an OAuth client's redirect URI (the client listens there, not docsmcp)."""
    blocks = {start + i: text for _language, text, start in code_blocks(path) for i in range(text.count("\n") + 1)}
    wrong = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        started = set(re.findall(r"(?:--port[ =]|MCP_SERVER_PORT=)(\d+)", blocks.get(number, "")))
        for match in LOCAL_URL.finditer(line):
            port = match.group(1)
            if port != default and port not in started and not line[:match.start()].endswith("--redirect-uri "):
                wrong.append(f"{_shown(path)}:{number}: port {port}")
    return wrong


def test_every_local_server_url_names_the_default_port_or_one_its_code_block_starts():
    default = str(settings.MCP_SERVER_PORT)
    assert [w for path in DOCS for w in wrong_ports(path, default)] == [], (
        f"the server listens on {default} by default (MCP_SERVER_PORT)")


def test_the_check_finds_an_option_that_does_not_exist(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```sh\n.venv/bin/python manage.py serve --folder x && docsmcp nosuch --x\n"
                    "sudo -u docsmcp git pull\n```\n")
    calls = invocations(page)
    assert [(c.command, c.args) for c in calls] == [("serve", ["--folder", "x"]), ("nosuch", ["--x"])]
    assert "--folder" not in _actions(_parser("serve"), None) and "nosuch" not in get_commands()
    page.write_text("Served on loopback (`manage.py serve`, `http://127.0.0.1:8000/mcp/`).\n"
                    "```sh\nmanage.py serve --port 8021 &\ncurl http://127.0.0.1:8021/health/\n```\n")
    assert wrong_ports(page, "8001") == ["page.md:1: port 8000"]
