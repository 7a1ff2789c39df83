"""The /mcp/ endpoint: the Streamable HTTP view, JSON-RPC, tool profiles, API keys and limits.

May import: `retrieval.errors`, `retrieval.search`, `retrieval.ingest.metadata`, `retrieval.chunkstore`,
`retrieval.llmstxt`, `retrieval.embeddings.local`, `corpus.access`, `corpus.chunkstore`, `corpus.errors`, `corpus.models`,
`corpus.querylog`, `corpus.selectors`, `corpus.services`, `corpus.serving`, `corpus.warming`,
`docsmcp_site.cli`, `docsmcp_site.home`. Builds are searched and read through corpus.serving; the
engine's modules give the request and result types and the errors to translate; the serving
master loads the local embedding model before forking so its workers share it (startup.py). The `mcp_config`
command writes a client's configuration with the command line the `docsmcp` CLI installs (site cli,
home). Never imports `evals` or `insights`.
"""
