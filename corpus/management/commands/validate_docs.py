import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.execution import active_index_path, validate_source
from corpus.progress import StageBars
from corpus.selectors import corpus_get
from retrieval.errors import ConfigError
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.sitegen import label_for

from ._findings import finding_lines


class Command(BaseCommand):
    # `manage.py check` is the place for system checks: here they would import every URL's views
    # (the REST API's schemas) before the first file is read
    requires_system_checks = []
    help = "Validate a corpus (manifests, front matter, hints, taxonomy) without building. Exit 1 on errors."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="registered corpus name")
        parser.add_argument("--source", help="a markdown directory (instead of --corpus)")
        parser.add_argument("--json", action="store_true", help="print findings as JSON")
        parser.add_argument("--warnings", action="store_true",
                            help="list every warning (a warning repeated on many pages is otherwise told once, "
                            "with its count)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        try:
            corpus = corpus_get(options["corpus"]) if options["corpus"] and not options["source"] else None
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        source = options["source"] or (corpus.source_dir if corpus else None)
        if not source:
            raise CommandError("give --corpus NAME or --source DIR")
        bars = StageBars(not options["no_progress"])
        try:
            scan = scan_corpus(Path(source), max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES)
            findings, results = validate_source(Path(source), previous=active_index_path(corpus), scan=scan,
                                                progress=lambda d, t: bars("validate", d, t))
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bars.close()
        items = [f.as_dict() for f in findings]
        errors = sum(1 for f in items if f["severity"] == "error")
        chunks = sum(r.chunk_count for r in results)
        failing = {r.relpath for r in results if any(f.severity == "error" for f in r.findings)} | set(scan.left_out)
        if options["json"]:
            self.stdout.write(json.dumps({"files": len(results), "chunks": chunks,
                                          "errors": errors, "pages_with_errors": len(failing),
                                          "generator": scan.generator, "generator_reason": scan.generator_reason,
                                          "excluded": scan.excluded, "findings": items}, indent=2))
        else:
            for line in finding_lines(items, every_warning=options["warnings"]):
                self.stdout.write(line)
            generator = label_for(scan.generator) + (f" ({scan.generator_reason})" if scan.generator_reason else "")
            self.stdout.write(f"read as {generator}; {len(scan.excluded)} path(s) excluded")
            if failing:
                self.stdout.write(f"a build leaves out the {len(failing)} page(s) with errors and builds the rest "
                                  "(with --strict it fails)")
            self.stdout.write(f"{len(results)} files, {chunks} chunks, "
                              f"{errors} error(s), {len(items) - errors} warning(s)")
        if errors:
            raise SystemExit(1)
