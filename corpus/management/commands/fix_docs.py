from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.fixes import fix_scan_report
from corpus.progress import StageBars
from corpus.selectors import corpus_get, default_corpus


class Command(BaseCommand):
    help = ("Propose fixes for a corpus (heuristics; --llm adds the LLM fixer) and store them as pending "
            "FixProposals for review in the admin. Prints each proposal's diff. Writes no source file.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="corpus name (default: the default corpus)")
        parser.add_argument("--llm", action="store_true", help="also ask the LLM fixer (OPENAI_BASE_URL, OPENAI_API_KEY)")
        parser.add_argument("--model", help="chat model for --llm (default: DOCSMCP_FIX_MODEL)")
        parser.add_argument("--file", action="append", dest="files",
                            help="with --llm: ask about this file (repeatable) instead of the worst candidates")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        bars = StageBars(not options["no_progress"])
        try:
            corpus = corpus_get(options["corpus"]) if options["corpus"] else default_corpus()
            report = fix_scan_report(corpus=corpus, use_llm=options["llm"], model=options["model"],
                                     files=options["files"], progress=bars)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bars.close()
        for proposal in report.proposals:
            self.stdout.write(f"#{proposal.pk} [{proposal.kind}] {proposal.file} -> {proposal.target_path} "
                              f"({proposal.source}, {proposal.status})")
            self.stdout.write(f"  {proposal.rationale}")
            self.stdout.write(proposal.diff)
        for relpath, why in report.llm_failures:
            self.stderr.write(f"LLM fixer failed for {relpath}: {why}")
        for note in report.skipped:
            self.stderr.write(f"skipped: {note}")
        self.stdout.write(f"corpus {corpus.name}: {len(report.proposals)} proposal(s), {report.created} new, "
                          f"{report.marked_stale} went stale, {len(report.llm_failures)} LLM failure(s). "
                          "Review them in the admin (Fix proposals).")
