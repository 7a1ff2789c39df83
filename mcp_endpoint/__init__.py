"""The /mcp/ endpoint: the Streamable HTTP view, JSON-RPC, tool profiles and limits.

May import: `retrieval.errors`, `retrieval.search`, `retrieval.format.metadata`, `retrieval.chunkstore`,
`retrieval.llmstxt`, `retrieval.embeddings.local`, `retrieval.storage`, `corpus.access`, `corpus.chunkstore`, `corpus.errors`, `corpus.models`,
`corpus.querylog`, `corpus.selectors`, `corpus.serving`, `corpus.warming`,
`corpus.apikeys`, `common`. Builds are searched and read through corpus.serving and callers
authenticated by corpus's API keys (apikeys); the engine's modules give the request and result
types and the errors to translate; the serving master loads the local embedding model and imports
the index libraries (retrieval.storage.load_engine) before forking so its workers share them (startup.py). Never imports `evals`, `insights` or `docsmcp_site`.
"""
