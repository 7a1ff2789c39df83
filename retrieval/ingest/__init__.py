"""Ingest: markdown in, an index build out.

Parsing (`parsing`), manifests, front matter and hints (`manifest`), the corpus scan (`scan`) of a
local folder (`folder`) or of a tree of bytes such as a git commit (`tree`), validation of one page
(`pages`) and of every page in a pool (`validate`), the paths a corpus leaves out (`exclude`), site
generators' syntax read before chunking (`sitegen`), chunking and chunk IDs (`chunking`), and the
build (`build`) by stage: parsed files as Arrow batches (`batches`), reuse of the previous build
(`reuse`), embedding (`embed`), writing or patching the tables (`tables`), their indexes (`indexes`),
carrying the previous build's mapped files and lexicon over (`carryover`). What the build writes is
described in `retrieval.format` (tables, metadata.json, slugs and terms, mapped files, lexicon).

May import: `retrieval.errors`, `retrieval.embeddings`, `retrieval.storage`,
`retrieval.corpus_summary`, `retrieval.format`. The build writes its summary in corpus_summary's terms
and its files in format's. Never
imports `retrieval.search`, `retrieval.fixes` or `retrieval.chunkstore`: a build must not depend on
how it will be read.
"""
