from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.selectors import corpus_get, default_corpus
from evals.errors import EvalError
from evals.selectors import suite_export, suite_get
from evals.services import suite_import


class Command(BaseCommand):
    help = "Import an eval suite from a JSON/JSONL case file (either spelling), or export one."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="create or refresh a suite from FILE")
        imp.add_argument("file")
        imp.add_argument("--suite", required=True)
        imp.add_argument("--corpus", help="the corpus the suite belongs to (default: the default corpus)")
        imp.add_argument("--match", choices=["exact", "leaf"], help="chunk matching of the suite's runs")
        imp.add_argument("--description")
        imp.add_argument("--keep-missing", action="store_true", help="keep cases that are not in FILE")
        exp = sub.add_parser("export", help="write a suite's cases")
        exp.add_argument("--suite", required=True)
        exp.add_argument("--corpus", help="the corpus the suite belongs to (default: the default corpus)")
        exp.add_argument("--format", choices=["jsonl", "json"], default="jsonl")
        exp.add_argument("--style", choices=["bench", "docs-mcp"], help="field spelling (default: bench for jsonl, "
                                                                     "docs-mcp for json)")
        exp.add_argument("-o", "--output", help="file to write (default: stdout)")

    def handle(self, *args, **options):
        try:
            corpus = corpus_get(options["corpus"]) if options["corpus"] else default_corpus()
            if options["action"] == "import":
                suite = suite_import(name=options["suite"], path=options["file"], corpus=corpus,
                                     description=options["description"], match_mode=options["match"],
                                     prune=not options["keep_missing"])
                self.stdout.write(f"suite {suite.name} of corpus {suite.corpus.name}: {suite.cases.count()} cases")
                return
            text = suite_export(suite=suite_get(options["suite"], corpus=corpus), fmt=options["format"], style=options["style"])
        except (CorpusError, EvalError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")
