import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.progress import StageBars
from corpus.selectors import corpus_get
from retrieval.errors import ConfigError
from retrieval.ingest.sources import validate_corpus

from ._findings import format_finding


class Command(BaseCommand):
    help = "Validate a corpus (manifests, front matter, hints, taxonomy) without building. Exit 1 on errors."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="registered corpus name")
        parser.add_argument("--source", help="a markdown directory (instead of --corpus)")
        parser.add_argument("--json", action="store_true", help="print findings as JSON")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        try:
            source = options["source"] or (corpus_get(options["corpus"]).source_dir if options["corpus"] else None)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        if not source:
            raise CommandError("give --corpus NAME or --source DIR")
        bars = StageBars(not options["no_progress"])
        try:
            _scan, results, findings = validate_corpus(Path(source), progress=lambda d, t: bars("validate", d, t),
                                                          max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES)
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bars.close()
        items = [f.as_dict() for f in findings]
        errors = sum(1 for f in items if f["severity"] == "error")
        if options["json"]:
            self.stdout.write(json.dumps({"files": len(results), "chunks": sum(len(r.chunks) for r in results),
                                          "errors": errors, "findings": items}, indent=2))
        else:
            for item in items:
                self.stdout.write(format_finding(item))
            self.stdout.write(f"{len(results)} files, {sum(len(r.chunks) for r in results)} chunks, "
                              f"{errors} error(s), {len(items) - errors} warning(s)")
        if errors:
            raise SystemExit(1)
