"""Ingest: markdown in, an index build out.

Parsing (`parsing`), manifests, front matter and hints (`manifest`), the corpus scan and
per-file validation (`sources`), the paths a corpus leaves out (`exclude`), site generators' syntax
read before chunking (`sitegen`), chunking and chunk IDs (`chunking`, `slugs`, `terms`), the
build's `metadata.json` (`metadata`), the table names and schemas both sides share (`layout`), the
files a serving process maps (`mapped`), how many pages and chunks hold each term (`lexicon`), and the build
(`build`) by stage: parsed files as Arrow batches (`batches`), reuse of the previous build (`reuse`),
embedding (`embed`), writing or patching the tables (`tables`), their indexes (`indexes`), the
mapped files and the lexicon (`mapped`).

May import: `retrieval.errors`, `retrieval.memory`, `retrieval.embeddings`, `retrieval.storage`,
`retrieval.corpus_summary`. The build writes its summary and its lexicon in corpus_summary's terms. Never
imports `retrieval.search`, `retrieval.fixes` or `retrieval.chunkstore`: a build must not depend on
how it will be read.
"""
