from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.execution import build_execute
from corpus.models import BuildRun
from corpus.progress import StageBars
from corpus.selectors import default_corpus
from corpus.services import build_request, corpus_ensure, corpus_update
from retrieval.errors import RetrievalError

from ._findings import format_finding


class Command(BaseCommand):
    help = ("Validate and build a corpus into a new LanceDB index, then activate it. "
            "Registers the corpus on first use with --source. Exit 1 when validation fails.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="corpus name (default: the default corpus)")
        parser.add_argument("--source", help="markdown directory; registers or updates the corpus")
        parser.add_argument("--embedding-provider",
                            help="none, hash, openai or local; becomes the corpus's setting for later builds")
        parser.add_argument("--change-embeddings", action="store_true",
                            help="confirm a build that drops or replaces the active build's vectors")
        parser.add_argument("--description", help="what the corpus holds, read by agents in the server's "
                            "instructions and search_docs's description, e.g. 'Kubernetes documentation' "
                            "(default: the root manifest's description)")
        parser.add_argument("--full", action="store_true", help="rebuild from scratch (no reuse, no cache)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        try:
            if options["corpus"]:
                corpus = corpus_ensure(name=options["corpus"], source_dir=options["source"])
            else:
                corpus = default_corpus()
            if options["description"]:
                corpus = corpus_update(corpus=corpus, description=options["description"])
            build = build_request(corpus=corpus, kind=BuildRun.KIND_FULL if options["full"] else BuildRun.KIND_INCREMENTAL,
                                  embedding_provider=options["embedding_provider"],
                                  change_embeddings=options["change_embeddings"], requested_by="manage.py")
        except (CorpusError, RetrievalError) as exc:
            raise CommandError(str(exc)) from exc
        bars = StageBars(not options["no_progress"])
        try:
            build = build_execute(build=build, echo=bars)
        finally:
            bars.close()
        for finding in build.findings:
            if finding["severity"] == "error" or options["verbosity"] > 1:
                self.stderr.write(format_finding(finding))
        if build.status != BuildRun.COMPLETE:
            self.stderr.write(f"build {build.build_id} {build.status}: {build.error}")
            self.stderr.write("the previously active index (if any) keeps serving")
            raise SystemExit(1)
        stats = build.stats
        self.stdout.write(
            f"corpus {corpus.name}: build {build.build_id} active — {stats['total_files']} files, "
            f"{stats['total_chunks']} chunks ({stats['chunked_files']} files chunked, {stats['reused_files']} reused, "
            f"{stats['embedded_chunks']} chunks embedded), {stats['warnings']} warning(s), "
            f"{build.timings.get('total', 0):.2f}s\nindex: {build.index_path}")
