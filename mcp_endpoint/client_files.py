"""`docsmcp setup CLIENT`: docsmcp written into an MCP client's own configuration file, and a usage rule
into the project's agent instructions.

Each client keeps its servers in its own file, under its own key, and spells the transport its own
way; `ClientFile` holds that, and `server_entry` the spelling. Files are merged, never replaced: other
servers and settings stay as they were, the old file is copied aside first, and a file that cannot be
read is refused rather than overwritten. An API key is never written into a file: the configuration
names an environment variable (in each client's syntax for one) that the client reads the key from.
Formats as each client documents them (docs/clients.md lists them with their sources).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_endpoint.errors import SetupError as SetupError

PROJECT, USER = "project", "user"
DEFAULT_KEY_ENV = "DOCSMCP_API_KEY"
RULE_BEGIN = "<!-- docsmcp:begin (written by `docsmcp setup`; rerun it to update, delete the block to remove) -->"
RULE_END = "<!-- docsmcp:end -->"


@dataclass(frozen=True)
class ClientFile:
    """Where one client reads its MCP servers from, and how it spells them."""

    name: str
    title: str
    project: str | None  # relative to the project directory; None: the client has no project file
    user: str | None  # relative to the home directory
    servers_key: str  # "mcpServers", or "servers" (VS Code), or "mcp_servers" (Codex's TOML table)
    rule: str  # the project file that carries the usage rule
    rule_whole_file: bool = False  # a file of its own (a Cursor or Windsurf rule) rather than a block in one
    note: str = ""  # what to do after the file is written


def _vscode_user() -> str:
    if sys.platform == "darwin":
        return "Library/Application Support/Code/User/mcp.json"
    if sys.platform == "win32":
        return "AppData/Roaming/Code/User/mcp.json"
    return ".config/Code/User/mcp.json"


CLIENT_FILES: dict[str, ClientFile] = {client.name: client for client in (
    ClientFile("claude-code", "Claude Code", ".mcp.json", ".claude.json", "mcpServers", "CLAUDE.md",
               note="Claude Code asks once to approve a project's .mcp.json servers; /mcp shows them."),
    ClientFile("cursor", "Cursor", ".cursor/mcp.json", ".cursor/mcp.json", "mcpServers", ".cursor/rules/docsmcp.mdc",
               rule_whole_file=True, note="Cursor: Settings > MCP lists the server; turn it on there if asked."),
    ClientFile("vscode", "VS Code", ".vscode/mcp.json", _vscode_user(), "servers", ".github/copilot-instructions.md",
               note="VS Code: the Start button above the server in mcp.json starts it; Copilot Chat's agent mode "
                    "uses its tools."),
    ClientFile("codex", "Codex CLI", ".codex/config.toml", ".codex/config.toml", "mcp_servers", "AGENTS.md",
               note="Codex reads a project's .codex/config.toml only once the project is trusted; `codex mcp list` "
                    "shows the server."),
    ClientFile("gemini", "Gemini CLI", ".gemini/settings.json", ".gemini/settings.json", "mcpServers", "GEMINI.md",
               note="Gemini CLI: /mcp shows the server and its tools."),
    ClientFile("windsurf", "Windsurf", None, ".codeium/windsurf/mcp_config.json", "mcpServers",
               ".windsurf/rules/docsmcp.md", rule_whole_file=True,
               note="Windsurf: refresh the MCP servers in Cascade's MCP panel."),
)}


@dataclass(frozen=True)
class Server:
    """What the client is to start or reach: an HTTP endpoint, or a command it spawns (stdio)."""

    url: str | None = None
    auth: str = "none"  # none | key | oauth (HTTP only)
    key_env: str = DEFAULT_KEY_ENV
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def config_path(client: ClientFile, scope: str, project_dir: Path, home: Path) -> Path:
    relative = client.project if scope == PROJECT else client.user
    if relative is None:
        raise SetupError(f"{client.title} keeps its MCP servers for the user only ({client.user}); "
                         "use --scope user")
    return (project_dir if scope == PROJECT else home) / relative


def server_entry(client: str, server: Server) -> dict[str, Any]:
    """The server as `client` spells it in its file."""
    if server.url is None:
        entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
        if client in ("claude-code", "vscode"):
            entry = {"type": "stdio", **entry}
        if server.env:
            entry["env"] = dict(server.env)
        return entry
    url_key = {"gemini": "httpUrl", "windsurf": "serverUrl"}.get(client, "url")
    entry = {url_key: server.url}
    if client in ("claude-code", "vscode"):
        entry = {"type": "http", **entry}
    if server.auth == "key":
        if client == "codex":  # Codex refuses a token written in the file; it reads the variable itself
            entry["bearer_token_env_var"] = server.key_env
        else:
            entry["headers"] = {"Authorization": f"Bearer {key_reference(client, server.key_env)}"}
    return entry


def key_reference(client: str, key_env: str) -> str:
    """How `client` spells "the value of this environment variable" inside its configuration."""
    if client == "claude-code":
        return f"${{{key_env}}}"
    if client == "gemini":
        return f"${key_env}"
    if client == "vscode":  # VS Code asks for it once and keeps it in its secret storage
        return f"${{input:{input_id(key_env)}}}"
    return f"${{env:{key_env}}}"  # Cursor, Windsurf


def input_id(key_env: str) -> str:
    return key_env.lower().replace("_", "-")


def merged_json(text: str | None, client: ClientFile, name: str, entry: dict[str, Any], server: Server,
                where: Path) -> str:
    """The file's JSON with the server set under its key; everything else kept, in its order."""
    data: dict[str, Any] = {}
    if text is not None and text.strip():
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SetupError(f"{where} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it, or run with "
                             "--dry-run and add the printed entry by hand") from exc
        if not isinstance(data, dict):
            raise SetupError(f"{where} holds a JSON {type(data).__name__}, not an object; fix it or move it aside")
    servers = data.setdefault(client.servers_key, {})
    if not isinstance(servers, dict):
        raise SetupError(f"{where}: {client.servers_key!r} is not an object; fix it or move the file aside")
    servers[name] = entry
    if client.name == "vscode" and server.url and server.auth == "key":
        inputs = [i for i in data.get("inputs", []) if not (isinstance(i, dict) and i.get("id") == input_id(server.key_env))]
        inputs.append({"type": "promptString", "id": input_id(server.key_env),
                       "description": "docsmcp API key (docsmcp mcp_apikey create NAME)", "password": True})
        data["inputs"] = inputs
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")


def merged_toml(text: str | None, name: str, entry: dict[str, Any], where: Path) -> str:
    """Codex's config.toml with the `[mcp_servers.NAME]` table (and its sub-tables) replaced or appended; the
    rest of the file, comments too, kept as written."""
    text = text or ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{where} is not valid TOML ({exc}); fix it, or run with --dry-run and add the printed "
                         "table by hand") from exc
    ours = {f"mcp_servers.{name}", f'mcp_servers."{name}"'}
    kept, skipping = [], False
    for line in text.splitlines():
        table = _TABLE.match(line)
        if table:
            header = re.sub(r"\s*\.\s*", ".", table.group(1))
            skipping = header in ours or any(header.startswith(f"{t}.") for t in ours)
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    block = toml_table(f"mcp_servers.{name}", entry)
    result = ("\n".join(kept) + "\n\n" if kept else "") + block
    try:
        parsed = tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:  # e.g. the server also defined inline elsewhere in the file
        raise SetupError(f"{where} defines mcp_servers.{name} in a way this command cannot replace ({exc}); "
                         "remove that definition, or run with --dry-run and edit by hand") from exc
    if parsed.get("mcp_servers", {}).get(name) != entry:
        raise SetupError(f"{where} also defines mcp_servers.{name} elsewhere; remove that definition and rerun")
    return result


def toml_table(header: str, entry: dict[str, Any]) -> str:
    """A TOML table of strings, lists of strings and one level of sub-tables (an `env`)."""
    lines, subtables = [f"[{header}]"], []
    for key, value in entry.items():
        if isinstance(value, dict):
            subtables.append((key, value))
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for key, value in subtables:
        lines += ["", f"[{header}.{key}]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's


def merged_config(client: ClientFile, text: str | None, name: str, server: Server, where: Path) -> str:
    entry = server_entry(client.name, server)
    if client.name == "codex":
        return merged_toml(text, name, entry, where)
    return merged_json(text, client, name, entry, server, where)


def rule_text(client: ClientFile, name: str, topic: str) -> str:
    """The instruction that tells the agent when to search these docs rather than answer from memory."""
    body = (f"## Documentation search ({name})\n\n"
            f"The `{name}` MCP server searches {topic}. Before answering a question about it, or writing code "
            f"that uses it, call `search_docs` with the question or the identifier (an API name, an error, a "
            f"setting), then `get_doc` with a returned `chunk_id` to read the section. Prefer what these docs "
            f"say over what you remember, cite the `chunk_id` you used, and say so when `coverage` is "
            f"`not_covered` instead of guessing. Report an answer the docs lacked with `docs_feedback`.\n")
    if client.name == "cursor":
        return f"---\ndescription: When to search {topic} with the {name} MCP server\nalwaysApply: true\n---\n\n{body}"
    if client.name == "windsurf":
        return f"---\ntrigger: always_on\n---\n\n{body}"
    return body


def merged_rule(text: str | None, block: str) -> str:
    """`block` between docsmcp's markers in an instructions file: replacing an earlier one, else appended."""
    wrapped = f"{RULE_BEGIN}\n{block.rstrip()}\n{RULE_END}\n"
    text = text or ""
    start, end = text.find(RULE_BEGIN), text.find(RULE_END)
    if start != -1 and end > start:
        return text[:start] + wrapped + text[end + len(RULE_END):].lstrip("\n")
    return (text.rstrip("\n") + "\n\n" if text.strip() else "") + wrapped


@dataclass(frozen=True)
class Change:
    path: Path
    text: str
    backup: Path | None = None  # where the previous file was copied, once written


def planned(path: Path, new_text: str) -> Change | None:
    """The change to make to `path`; None when it already holds `new_text`."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    return None if old == new_text else Change(path, new_text)


def write(change: Change) -> Change:
    """Writes the file, after copying the old one to `<name>.<timestamp>.bak` beside it."""
    backup = None
    if change.path.exists():
        backup = change.path.with_name(f"{change.path.name}.{time.strftime('%Y%m%dT%H%M%S')}.bak")
        shutil.copy2(change.path, backup)
    change.path.parent.mkdir(parents=True, exist_ok=True)
    partial = change.path.with_name(change.path.name + ".docsmcp-partial")
    partial.write_text(change.text, encoding="utf-8")
    if backup is not None:
        shutil.copymode(backup, partial)
    partial.replace(change.path)
    return Change(change.path, change.text, backup)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}") from exc
