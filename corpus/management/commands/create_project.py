from django.core.management.base import BaseCommand, CommandError

from corpus.chunkstore import project_create, project_id
from corpus.errors import CorpusError


class Command(BaseCommand):
    help = ("Register a citeloom project (a corpus of kind 'chunks', fed by the store_chunks tool at "
            "/mcp/citeloom/). Its corpus is named proj-<slug of the id> unless --name is given.")

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id, e.g. citeloom/clean-arch")
        parser.add_argument("--name", help="corpus name (a slug)")
        parser.add_argument("--embed-model", default="",
                            help="the model the chunks are embedded with (else recorded by the first store_chunks)")
        parser.add_argument("--dimensions", type=int, help="vector dimension of that model")
        parser.add_argument("--no-hybrid", action="store_true", help="refuse query_hybrid for this project")
        parser.add_argument("--description", default="")

    def handle(self, *args, **options):
        try:
            corpus = project_create(project=options["project"], name=options["name"],
                                    embed_model=options["embed_model"], dimensions=options["dimensions"],
                                    hybrid=not options["no_hybrid"], description=options["description"])
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"project {project_id(corpus)} -> corpus {corpus.name}")
