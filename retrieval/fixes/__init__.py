"""Fixes: proposals that repair a corpus's manifests, front matter and hint comments.

The deterministic fixer (`heuristics`, with `hints` and `taxonomy`), the LLM fixer (`llm`), what
every fixer shares (`base`), minimal format-preserving edits and their diffs (`edits`, with
`json_edits` for manifests and `frontmatter_edits` for front matter), the before/after chunk preview
(`preview`), writing an approved change (`apply`), and content fixes for questions the docs do not
answer (`content`, what they share: the words the questions miss (`questions`), an outline the
author writes (`outline`) or the LLM's section (`llm_content`), and either draft checked and
inserted (`drafts`)).

May import: `retrieval.errors`, `retrieval.ingest`, `retrieval.format.terms`, `retrieval.embeddings.openai_api`.
A fix is checked by parsing and chunking the changed files as a build would (ingest) and a content fix
spells the question's terms as the lexicon does (format.terms); the LLM fixer reuses
the OpenAI client settings (openai_api). Never imports `retrieval.search`.
"""
