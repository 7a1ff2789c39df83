"""What checking a caller costs: CPU per MCP call with an API key, with an OAuth access token of the
built-in authorization server, and with neither, through the whole Django stack in this process.

    python bench/auth_cost.py [--database-url URL] [--calls N] [--rounds N]

It migrates a fresh database (a temporary SQLite file unless --database-url names another, e.g. an
empty PostgreSQL database), creates a user, an API key and a client, signs the user in through the
real authorize -> consent -> token flow, then sends `ping` to /mcp/ with each credential in turn
(`--rounds` rounds of `--calls` calls each, alternating, after a warm-up) through Django's test
client. It prints this process's CPU time (user + system) per call for each, the best round's, and
the token's figure over the key's. Only CPU is measured: a database query's own time in the database
server is not counted (with SQLite it is, since the database runs in this process).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PING = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


def configure(database_url: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": database_url,
        "MCP_AUTH_REQUIRED": "true",
        "MCP_API_KEY": "",
        "MCP_RATE_LIMIT_PER_MINUTE": "0",
        "MCP_RATE_LIMIT_REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "testserver",
    })
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def credentials() -> dict[str, str]:
    from django.contrib.auth.models import User
    from django.test import Client

    from corpus.apikeys import create_api_key
    from tests.oauth_helpers import register, sign_in

    _row, key = create_api_key("bench", ["read"])
    user = User.objects.create_user("bench-user", password="pw-bench-1")
    client = Client()
    tokens = sign_in(client, user, register(client), "http://testserver/mcp/")
    return {"key": key, "token": tokens["access_token"]}


def cpu_per_call(client, authorization: str | None, calls: int) -> float:
    extra = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    start = time.process_time()
    for _ in range(calls):
        response = client.post("/mcp/", PING, content_type="application/json", **extra)
        if response.status_code != (200 if authorization else 401):
            raise SystemExit(f"unexpected {response.status_code}: {response.content[:300]!r}")
    return (time.process_time() - start) / calls * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="an empty database to migrate (default: a temporary SQLite file)")
    ap.add_argument("--calls", type=int, default=2000, help="calls per credential per round (default 2000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds, alternating credentials (default 5)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="auth-cost-") as workdir:
        configure(args.database_url or f"sqlite:///{Path(workdir) / 'bench.sqlite3'}")
        from django.test import Client

        secrets = credentials()
        client = Client()
        sent = {"none (401)": None, "key": f"Bearer {secrets['key']}", "token": f"Bearer {secrets['token']}"}
        for authorization in sent.values():
            cpu_per_call(client, authorization, 200)  # warm-up
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, authorization in sent.items():
                figure = cpu_per_call(client, authorization, args.calls)
                best[name] = min(best.get(name, figure), figure)
        load = os.getloadavg()
        print(f"CPU per MCP ping, best of {args.rounds} rounds of {args.calls} calls "
              f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}):")
        for name, figure in best.items():
            print(f"  {name:<11} {figure:.3f} ms/call")
        print(f"  token - key {best['token'] - best['key']:+.3f} ms/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
