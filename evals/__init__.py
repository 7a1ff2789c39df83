"""The evals app: suites of questions, runs against a corpus, their metrics and dashboards.

May import: `retrieval.errors`, `retrieval.allowlist`, `retrieval.storage`, `corpus.access`,
`corpus.api.auth`, `corpus.errors`, `corpus.models`, `corpus.querylog`, `corpus.queue`, `corpus.selectors`,
`mcp_endpoint.jsonrpc`, `mcp_endpoint.profiles`, `mcp_endpoint.protocol`, `common`. A run asks its
questions through the MCP tool code (mcp_endpoint), so it measures what agents get; storage sizes
a build for the run's record; its API asks for keys as corpus's does (corpus.api.auth). Never imports `insights` or `docsmcp_site`.
"""
