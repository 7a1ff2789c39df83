from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.selectors import corpus_get, family_members
from corpus.webhooks import hook_secret


class Command(BaseCommand):
    help = ("Print the secret of a corpus's push webhook (POST /api/v1/hooks/git/<corpus>), to paste into "
            "GitHub, GitLab or Gitea. --rotate makes a new one; the old one stops working at once.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--rotate", action="store_true", help="replace the secret")

    def handle(self, *args, **options):
        try:
            corpus = corpus_get(options["corpus"]).family
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        if not any(member.git_url for member in family_members(corpus)):
            raise CommandError(
                f"corpus {corpus.name!r} is not built from a git repository, so a push webhook has nothing to "
                f"rebuild; register one with `manage.py build_index --corpus {corpus.name} --git URL "
                "[--ref REF]` (docs/versions.md), or rebuild this one with `manage.py build_index "
                f"--corpus {corpus.name}`")
        secret = hook_secret(corpus, rotate=options["rotate"])
        self.stdout.write(f"{secret}\n")
        self.stderr.write(f"webhook URL: <server>/api/v1/hooks/git/{corpus.name} (content type application/json, "
                          "push events)")
