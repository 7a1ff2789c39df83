"""What authors learn from use: the query log of agents' calls and feedback, the insights pages read
from it, and the eval runs that measure retrieval from build to build."""

from docsmcp_site.settings.env import env

# The query log (corpus/querylog.py, docs/security.md): every search and read call, and agents' feedback.
# full: everything; no-text: no query text, feedback query or comment; off: nothing is recorded.
DOCSMCP_QUERY_LOG = env("DOCSMCP_QUERY_LOG")
# Days records and feedback are kept (0: forever), and how many records a process buffers for its writer.
DOCSMCP_QUERY_LOG_DAYS = env("DOCSMCP_QUERY_LOG_DAYS")
DOCSMCP_QUERY_LOG_BUFFER = env("DOCSMCP_QUERY_LOG_BUFFER")
# Feedback tool calls (docs_feedback and its equivalents) per caller per minute, beside MCP_RATE_LIMIT_PER_MINUTE.
DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE = env("DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE")
# Insights (docs/feedback.md): a search whose best hit scores below this counts as low-score; a corpus's
# settings {"low_score": 0.3} override it. Scores are fused ranks in [0, 1]: 1 = first in every leg.
DOCSMCP_INSIGHTS_LOW_SCORE = env("DOCSMCP_INSIGHTS_LOW_SCORE")
# Seconds a corpus page's aggregates (calls per day, top queries, pages) are reused; 0: always recomputed.
DOCSMCP_INSIGHTS_CACHE_SECONDS = env("DOCSMCP_INSIGHTS_CACHE_SECONDS")
# Eval runs over HTTP may target this server's own /mcp/ URLs and these URL prefixes only.
DOCSMCP_EVAL_ALLOWED_URLS = env("DOCSMCP_EVAL_ALLOWED_URLS")
