"""Manage API keys without the admin (containers, CI): create, list, limit to corpora, revoke."""

from django.core.management.base import BaseCommand, CommandError

from corpus.apikeys import create_api_key, revoke_api_keys
from corpus.models import SCOPES, ApiKey


def _names(value: str) -> list[str]:
    return sorted({n.strip() for n in value.split(",") if n.strip()})


class Command(BaseCommand):
    help = "Create, list, limit or revoke API keys for /mcp/ and /api/v1/. The key is printed once, on create."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a key and print it")
        create.add_argument("name")
        create.add_argument("--scopes", default="read", help=f"comma-separated, from {', '.join(SCOPES)}")
        create.add_argument("--corpora", default="", help="comma-separated corpus names the key is limited to "
                                                          "(default: every corpus)")
        sub.add_parser("list", help="list keys (prefix, scopes, corpora, status)")
        limit = sub.add_parser("corpora", help="set the corpora a key is limited to, by its 8-character prefix")
        limit.add_argument("prefix")
        limit.add_argument("corpora", help="comma-separated corpus names; '' lifts the limit (every corpus)")
        revoke = sub.add_parser("revoke", help="revoke keys by their 8-character prefix")
        revoke.add_argument("prefix")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "create":
            scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
            try:
                row, key = create_api_key(options["name"], scopes, _names(options["corpora"]))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            limit = f"; corpora: {', '.join(row.corpora)}" if row.corpora else ""
            self.stderr.write(f"Created API key {row.prefix}… for {row.name} ({', '.join(row.scopes)}{limit}).")
            self.stdout.write(key)
        elif action == "list":
            for row in ApiKey.objects.all():
                status = "active" if row.is_active else f"revoked {row.revoked_at:%Y-%m-%d}"
                used = f"{row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "never"
                corpora = ",".join(row.corpora) or "*"
                self.stdout.write(
                    f"{row.prefix}  {row.name:30}  {','.join(row.scopes):22}  {corpora:24}  {status:18}  used {used}"
                )
        elif action == "corpora":
            count = ApiKey.objects.filter(prefix=options["prefix"], revoked_at__isnull=True).update(
                corpora=_names(options["corpora"]))
            if not count:
                raise CommandError(f"No active key with prefix {options['prefix']!r}.")
            self.stdout.write(f"Limited {count} key(s) to: {options['corpora'] or 'every corpus'}.")
        elif action == "revoke":
            count = revoke_api_keys(ApiKey.objects.filter(prefix=options["prefix"]))
            if not count:
                raise CommandError(f"No active key with prefix {options['prefix']!r}.")
            self.stdout.write(f"Revoked {count} key(s).")
