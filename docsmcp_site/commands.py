"""What `docsmcp --help` lists: docsmcp's own commands grouped by the task they serve.

Plain data with no import beyond the standard library, so `docsmcp --help` answers without setting up
Django (whose apps import OAuth, ninja and LanceDB). Django's development commands (`startapp`,
`makemessages`, `squashmigrations`...) are left out of the list but still run; `docsmcp django-help`
lists every command. tests/docsmcp_site/test_cli.py checks that each command named here exists and that every
command of docsmcp's own apps is named here.
"""

from __future__ import annotations

import textwrap

COLUMNS = 100

# The spelling a user types -> the management command it runs.
ALIASES = {"stdio": "mcp_stdio"}

# (task, ((usage, summary), ...)); a usage's first word is the command.
TASKS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Serve a docs folder", (
        ("serve [PATH]", "build the markdown folder PATH (what changed since the last run) and serve it over "
                         "HTTP at /mcp/; without PATH, serve every registered corpus"),
        ("stdio [PATH]", "the same over stdin/stdout, for a client that starts docsmcp itself"),
    )),
    ("Connect an agent", (
        ("setup CLIENT", "write docsmcp into the MCP configuration of Claude Code, Cursor, VS Code, Codex CLI, "
                         "Gemini CLI or Windsurf (setup --list)"),
        ("mcp_config", "print a client configuration instead of writing it"),
    )),
    ("Build and check docs", (
        ("build_index", "validate and build a corpus into a new index, then activate it"),
        ("validate_docs", "check manifests, front matter, hints and taxonomy without building"),
        ("fix_docs", "propose fixes (heuristic or LLM) for review in the admin"),
        ("chunks", "show the chunks the active build holds: what an agent will see"),
        ("create_project", "register a citeloom project (chunks stored by an agent)"),
    )),
    ("Keys and sign-in", (
        ("mcp_apikey", "create, list, limit or revoke API keys for /mcp/ and /api/v1/"),
        ("mcp_oauth_client", "register the OAuth clients that may ask users to sign in"),
        ("git_hook_secret", "print or rotate the secret of a corpus's push webhook"),
        ("createsuperuser", "create an account for the admin (/admin/) and the dashboards"),
    )),
    ("Evals and insights", (
        ("run_eval", "run an eval suite against a corpus and store its metrics (/evals/)"),
        ("eval_suite", "import or export an eval suite's cases"),
        ("prune_query_log", "delete query-log records and feedback older than DOCSMCP_QUERY_LOG_DAYS "
                            "(what /insights/ reads)"),
    )),
    ("Database", (
        ("migrate", "create or update the database (the embedded SQLite one is migrated on its own)"),
    )),
)

FOOTER = """\
`docsmcp COMMAND --help` shows a command's arguments and options.
`docsmcp django-help` lists every command, Django's development commands too; they all still run.
Documentation: README.md and docs/ (docs/clients.md for agents, docs/deploy.md for servers)."""


def command_names() -> list[str]:
    """The management commands the list names (aliases resolved)."""
    names = []
    for _task, rows in TASKS:
        for usage, _summary in rows:
            word = usage.split()[0]
            names.append(ALIASES.get(word, word))
    return names


def overview(version: str) -> str:
    """The text of `docsmcp --help`."""
    width = max(len(usage) for _task, rows in TASKS for usage, _summary in rows) + 2
    lines = [f"docsmcp {version}: documentation search for AI agents, over MCP.", "",
             "Usage: docsmcp COMMAND [ARGS]", ""]
    for task, rows in TASKS:
        lines.append(f"{task}:")
        for usage, summary in rows:
            lines += textwrap.wrap(summary, COLUMNS, initial_indent=f"  {usage.ljust(width)}",
                                   subsequent_indent=" " * (width + 2))
        lines.append("")
    lines.append(FOOTER)
    return "\n".join(lines)
