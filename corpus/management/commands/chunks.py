import json

from django.core.management.base import BaseCommand, CommandError

from corpus.errors import CorpusError
from corpus.serving import active_index
from retrieval.format.layout import sql_string


class Command(BaseCommand):
    help = "Show what the active build holds (chunk ID, heading, lines, size): what an agent will see."

    def add_arguments(self, parser):
        parser.add_argument("--corpus")
        parser.add_argument("--file", help="only this file (path relative to the corpus)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        try:
            index = active_index(options["corpus"])
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        where = f"filepath = {sql_string(options['file'])}" if options["file"] else None
        found = index.chunks.to_table(columns=["chunk_id", "filepath", "heading", "start_line", "end_line",
                                               "chunk_index", "content"], filter=where)
        rows = sorted(found.to_pylist(), key=lambda r: (r["filepath"], r["chunk_index"]))
        if options["file"] and not rows:
            raise CommandError(f"no chunks for file {options['file']!r} in build {index.build_id}")
        items = [{"chunk_id": r["chunk_id"], "heading": r["heading"], "lines": [r["start_line"], r["end_line"]],
                  "size": len(r["content"])} for r in rows]
        if options["json"]:
            self.stdout.write(json.dumps({"build_id": index.build_id, "chunks": items}, indent=2, ensure_ascii=False))
            return
        for item in items:
            self.stdout.write(f"{item['chunk_id']}\t{item['heading']}\tL{item['lines'][0]}-{item['lines'][1]}\t"
                              f"{item['size']} chars")
        self.stdout.write(f"{len(items)} chunks in build {index.build_id}")
