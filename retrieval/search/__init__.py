"""Search: the engine that answers queries on one opened build.

An opened build (`index`: catalog, compressed texts, int8 vectors), the legs that rank it
(`legs`), their fusion (`fusion`), filters and auto-include (`filters`), variant collapse,
cursors, zero-result hints and snippets, and the reads an agent makes besides search
(`documents`, `related`). `engine.search` ties them together.

May import: `retrieval.errors`, `retrieval.memory`, `retrieval.embeddings`, `retrieval.storage`,
`retrieval.corpus_summary`, `retrieval.ingest.layout`, `retrieval.ingest.metadata`, `retrieval.ingest.terms`,
`retrieval.ingest.slugs`, `retrieval.ingest.linkgraph`, `retrieval.ingest.mapped`, `retrieval.ingest.lexicon`. From ingest, only the modules that describe a
build (its tables, its metadata.json, how its terms and slugs and stored links are spelt, the files
its serving processes map): never the scanning and writing.
"""
