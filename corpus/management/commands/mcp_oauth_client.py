"""Register OAuth clients of the built-in authorization server by hand, for a client that neither registers
itself (dynamic registration off) nor has a client metadata document: create, list, delete."""

from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError


def _redirect_uri(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise CommandError(f"--redirect-uri {value!r} must be an absolute http(s) URL without a fragment")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise CommandError(f"--redirect-uri {value!r}: plain http is only for loopback redirects; use https")
    return value


class Command(BaseCommand):
    help = ("Create, list or delete OAuth clients that may ask users to sign in for /mcp/ and /api/v1/. "
            "A public client (the default) proves itself with PKCE; --confidential prints a secret once.")

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="register a client and print its client_id")
        create.add_argument("name")
        create.add_argument("--redirect-uri", action="append", required=True, dest="redirect_uris",
                            help="where the client receives the code (repeat for several)")
        create.add_argument("--confidential", action="store_true", help="a client that keeps a secret (a server)")
        sub.add_parser("list", help="list clients (client_id, name, redirect URIs, active tokens)")
        delete = sub.add_parser("delete", help="delete a client and every token it holds")
        delete.add_argument("client_id")

    def handle(self, *args, **options):
        from oauth2_provider.generators import generate_client_secret
        from oauth2_provider.models import get_access_token_model, get_application_model

        applications = get_application_model()
        action = options["action"]
        if action == "create":
            uris = [_redirect_uri(u) for u in options["redirect_uris"]]
            secret = generate_client_secret() if options["confidential"] else ""
            app = applications.objects.create(
                name=options["name"], redirect_uris=" ".join(uris), client_secret=secret,
                client_type=applications.CLIENT_CONFIDENTIAL if secret else applications.CLIENT_PUBLIC,
                authorization_grant_type=applications.GRANT_AUTHORIZATION_CODE)
            self.stdout.write(f"client_id: {app.client_id}")
            if secret:
                self.stdout.write(f"client_secret: {secret}   (shown once)")
        elif action == "list":
            now_tokens = get_access_token_model().objects
            for app in applications.objects.order_by("name"):
                live = now_tokens.filter(application=app).count()
                self.stdout.write(f"{app.client_id}  {app.name}  {app.redirect_uris}  tokens: {live}")
        elif action == "delete":
            deleted, _ = applications.objects.filter(client_id=options["client_id"]).delete()
            if not deleted:
                raise CommandError(f"no client with client_id {options['client_id']!r} (see `mcp_oauth_client list`)")
            self.stderr.write(f"Deleted client {options['client_id']} and its tokens.")
