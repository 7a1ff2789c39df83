from django.core.management.base import BaseCommand

from corpus import querylog


class Command(BaseCommand):
    help = ("Delete query-log records and agent feedback older than DOCSMCP_QUERY_LOG_DAYS (or --days). "
            "Serving processes do this once an hour on their own; run it from cron where nothing serves.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None,
                            help="keep this many days instead of DOCSMCP_QUERY_LOG_DAYS (0: keep everything)")
        parser.add_argument("--all", action="store_true",
                            help="delete every record and feedback item (after turning DOCSMCP_QUERY_LOG off)")

    def handle(self, *args, **options):
        deleted = querylog.prune(options["days"], everything=options["all"])
        self.stdout.write(f"deleted {deleted['records']} query records and {deleted['feedback']} feedback items")
