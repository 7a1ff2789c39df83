"""The insights app: the query log read for authors (analytics, gap groups, actions, API).

The log's reads: the period and its filters (`selectors`), traffic (`traffic`), the questions gap
groups are made of (`gap_candidates`), readers' feedback (`feedback_reads`).

May import: `retrieval.errors`, `retrieval.search.engine`, `retrieval.embeddings` (gap grouping's
bundled model), `corpus.api.auth`, `corpus.api.fixes`, `corpus.errors`, `corpus.content_fixes`,
`corpus.models`, `corpus.queue` (queueing a grouping run), `corpus.selectors`, `corpus.serving`,
`evals.charts`, `evals.models`, `common`. Its API answers fix proposals in corpus's own shape
(corpus.api.fixes) so a proposal reads the same on both; its charts are the eval dashboards'
(evals.charts). Never imports `mcp_endpoint` or `docsmcp_site`; only the site's URLs and API
assembly import insights.
"""
