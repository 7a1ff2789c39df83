"""The citeloom profile (docs/contracts/citeloom-tools.md): per-tool timeouts in seconds, output shaping,
store_chunks batch bounds."""

from docsmcp_site.settings.env import env

CITELOOM_TIMEOUTS = {
    "store_chunks": env("CITELOOM_TIMEOUT_STORE_CHUNKS"),
    "find_chunks": env("CITELOOM_TIMEOUT_FIND_CHUNKS"),
    "query_hybrid": env("CITELOOM_TIMEOUT_QUERY_HYBRID"),
    "inspect_collection": env("CITELOOM_TIMEOUT_INSPECT_COLLECTION"),
    "list_projects": env("CITELOOM_TIMEOUT_LIST_PROJECTS"),
}
CITELOOM_MAX_CHARS_PER_CHUNK = env("CITELOOM_MAX_CHARS_PER_CHUNK")
CITELOOM_MAX_TOP_K = env("CITELOOM_MAX_TOP_K")
CITELOOM_BATCH_MIN = env("CITELOOM_BATCH_MIN")
CITELOOM_BATCH_MAX = env("CITELOOM_BATCH_MAX")
# store_chunks bodies carry vectors (500 x 384 floats is about 4 MB): the citeloom path takes this much.
CITELOOM_MAX_BODY_BYTES = env("CITELOOM_MAX_BODY_BYTES")
