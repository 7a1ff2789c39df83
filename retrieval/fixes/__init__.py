"""Fixes: proposals that repair a corpus's manifests, front matter and hint comments.

The deterministic fixer (`heuristics`, with `hints` and `taxonomy`), the LLM fixer (`llm`),
what every fixer shares (`base`), minimal format-preserving edits and their diffs (`edits`),
the before/after chunk preview (`preview`), and writing an approved change (`apply`).

May import: `retrieval.errors`, `retrieval.ingest` (parsing, manifests, chunking) and
`retrieval.embeddings` (the OpenAI client settings). Never imports `retrieval.search`.
"""
