from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.execution import build_execute
from corpus.models import BuildRun
from corpus.progress import StageBars
from corpus.selectors import default_corpus
from corpus.services import build_request, corpus_update
from corpus.versions import behind, corpus_register
from retrieval.errors import RetrievalError
from retrieval.ingest.sitegen import label_for

from ._findings import finding_lines, left_out_line


class Command(BaseCommand):
    # `manage.py check` is the place for system checks: here they would import every URL's views
    # (the REST API's schemas) before the first line of work
    requires_system_checks = []
    help = ("Validate and build a corpus into a new LanceDB index, then activate it. "
            "Registers the corpus on first use with --source or --git. Exit 1 when validation fails.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="corpus name (default: the default corpus)")
        parser.add_argument("--source", help="markdown directory; registers or updates the corpus")
        parser.add_argument("--git", metavar="URL", help="git repository the markdown comes from (any URL git "
                            "accepts: file://, https://, ssh://; no password in it); registers or updates the corpus")
        parser.add_argument("--ref", help="with --git: branch or tag to build (default: the remote's HEAD)")
        parser.add_argument("--subdir", help="with --git: the corpus root inside the repository")
        parser.add_argument("--corpus-version", dest="corpus_version", metavar="LABEL",
                            help="which version of the corpus this is (e.g. v1.27); a new label adds a version "
                            "beside the others. Same as --corpus NAME@LABEL")
        parser.add_argument("--default", action="store_true",
                            help="serve this version under the corpus's own name from now on")
        parser.add_argument("--if-stale", action="store_true",
                            help="build only the versions whose source moved past their active build "
                            "(the git ref's newest commit, or the directory's content)")
        parser.add_argument("--embedding-provider",
                            help="none, hash, openai or local; becomes the corpus's setting for later builds")
        parser.add_argument("--change-embeddings", action="store_true",
                            help="confirm a build that drops or replaces the active build's vectors")
        parser.add_argument("--description", help="what the corpus holds, read by agents in the server's "
                            "instructions and search_docs's description, e.g. 'Kubernetes documentation' "
                            "(default: the root manifest's description)")
        parser.add_argument("--full", action="store_true", help="rebuild from scratch (no reuse, no cache)")
        parser.add_argument("--strict", action="store_true", default=None,
                            help="fail the build on any error, for CI (default: the corpus's `strict` setting; "
                            "otherwise a page with an error is left out and the rest is built)")
        parser.add_argument("--warnings", action="store_true",
                            help="list every warning (a warning repeated on many pages is otherwise told once)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        try:
            if options["corpus"]:
                corpus = corpus_register(name=options["corpus"], version=options["corpus_version"] or "",
                                         source_dir=options["source"], git_url=options["git"],
                                         git_ref=options["ref"], git_subdir=options["subdir"],
                                         make_default=options["default"], any_source=True)
            else:
                corpus = default_corpus()
            if options["description"]:
                corpus = corpus_update(corpus=corpus, description=options["description"])
            targets = [corpus]
            if options["if_stale"]:
                stale = behind(corpus)
                for member, _revision in stale:
                    self.stdout.write(f"corpus {member.name}: built {member.built_revision[:12] or 'nothing'}, "
                                      f"source at {_revision[:12]}: building")
                if not stale:
                    self.stdout.write(f"corpus {corpus.name}: up to date, nothing to build")
                targets = [member for member, _revision in stale]
        except (CorpusError, RetrievalError) as exc:
            raise CommandError(str(exc)) from exc
        failed = False
        for target in targets:
            failed = self._build(target, options) or failed
        if failed:
            raise SystemExit(1)

    def _build(self, corpus, options) -> bool:
        """Build one corpus (or version) to the end; True when it failed."""
        try:
            build = build_request(corpus=corpus, kind=BuildRun.KIND_FULL if options["full"] else BuildRun.KIND_INCREMENTAL,
                                  embedding_provider=options["embedding_provider"],
                                  change_embeddings=options["change_embeddings"], requested_by="manage.py")
        except (CorpusError, RetrievalError) as exc:
            raise CommandError(str(exc)) from exc
        bars = StageBars(not options["no_progress"])
        try:
            build = build_execute(build=build, echo=bars, strict=options["strict"])
        finally:
            bars.close()
        every = options["warnings"] or options["verbosity"] > 1
        for line in finding_lines(build.findings, every_warning=every):
            self.stderr.write(line)
        if build.status != BuildRun.COMPLETE:
            self.stderr.write(f"build {build.build_id} {build.status}: {build.error}")
            self.stderr.write("the previously active index (if any) keeps serving")
            return True
        stats = build.stats
        self.stdout.write(
            f"corpus {corpus.name}: build {build.build_id} active — {stats['total_files']} files, "
            f"{stats['total_chunks']} chunks ({stats['chunked_files']} files chunked, {stats['reused_files']} reused, "
            f"{stats['embedded_chunks']} chunks embedded), {stats['warnings']} warning(s), "
            f"{build.timings.get('total', 0):.2f}s\nindex: {build.index_path}")
        if left_out_line(stats):
            self.stdout.write(left_out_line(stats))
        if stats.get("generator") or stats.get("excluded_files"):
            read = f"read as {label_for(stats['generator'])}" if stats.get("generator") else "plain markdown"
            self.stdout.write(f"{read}; {stats.get('excluded_files', 0)} path(s) excluded (defaults, "
                              "the manifest's exclude, .docsmcpignore)")
        revision = stats.get("revision") or ""
        version = f"version {stats['version']}, " if stats.get("version") else ""
        self.stdout.write(f"serves {version}revision {revision}")
        return False
