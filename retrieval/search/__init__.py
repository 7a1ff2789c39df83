"""Search: the engine that answers queries on one opened build.

An opened build (`index`: catalog, compressed texts, int8 vectors; kept per process by
`index_cache`), the legs that rank it (`legs`), their fusion (`fusion`), filters and auto-include
(`filters`), variant collapse, cursors, zero-result hints and snippets, and the reads an agent makes
besides search (`documents`, `related`). `engine.search` ties them together, on one ranking (`ranking`).

May import: `retrieval.errors`, `retrieval.embeddings`, `retrieval.storage`,
`retrieval.corpus_summary`, `retrieval.format`. A build is read as format describes it (its tables,
its metadata.json, how its terms and slugs and stored links are spelt, the files its serving
processes map); never imports `retrieval.ingest`, the scanning and writing.
"""
