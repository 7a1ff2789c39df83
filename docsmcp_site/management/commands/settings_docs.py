from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from docsmcp_site.checks import documented
from docsmcp_site.settings.registry import render_markdown

PAGE = Path(__file__).resolve().parents[3] / "docs" / "settings.md"


def page() -> str:
    return render_markdown(documented())


class Command(BaseCommand):
    help = ("Write docs/settings.md from the settings registry (docsmcp_site/settings/registry.py) and the system "
            "checks (docsmcp_site/checks.py); with --check, exit 1 when the committed page differs instead.")
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="compare, do not write")

    def handle(self, *args, **options):
        current = PAGE.read_text() if PAGE.exists() else ""
        if options["check"]:
            if current != page():
                raise CommandError(f"{PAGE} is not what the registry gives; run `manage.py settings_docs`")
            return
        PAGE.write_text(page())
        self.stdout.write(f"wrote {PAGE}")
