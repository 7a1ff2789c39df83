"""Manage MCP API keys without the admin (containers, CI): create, list, revoke."""

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint.apikeys import create_api_key, revoke_api_keys
from mcp_endpoint.models import SCOPES, ApiKey


class Command(BaseCommand):
    help = "Create, list or revoke API keys for /mcp/. The key is printed once, on create."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a key and print it")
        create.add_argument("name")
        create.add_argument("--scopes", default="read", help=f"comma-separated, from {', '.join(SCOPES)}")
        sub.add_parser("list", help="list keys (prefix, scopes, status)")
        revoke = sub.add_parser("revoke", help="revoke keys by their 8-character prefix")
        revoke.add_argument("prefix")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "create":
            scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
            try:
                row, key = create_api_key(options["name"], scopes)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(f"Created API key {row.prefix}… for {row.name} ({', '.join(row.scopes)}).")
            self.stdout.write(key)
        elif action == "list":
            for row in ApiKey.objects.all():
                status = "active" if row.is_active else f"revoked {row.revoked_at:%Y-%m-%d}"
                used = f"{row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "never"
                self.stdout.write(
                    f"{row.prefix}  {row.name:30}  {','.join(row.scopes):22}  {status:18}  used {used}"
                )
        elif action == "revoke":
            count = revoke_api_keys(ApiKey.objects.filter(prefix=options["prefix"]))
            if not count:
                raise CommandError(f"No active key with prefix {options['prefix']!r}.")
            self.stdout.write(f"Revoked {count} key(s).")
