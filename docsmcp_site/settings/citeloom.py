"""The citeloom profile (docs/contracts/citeloom-tools.md): per-tool timeouts in seconds, output shaping,
store_chunks batch bounds."""

from docsmcp_site.settings.env import env_float, env_int

CITELOOM_TIMEOUTS = {
    "store_chunks": env_float("CITELOOM_TIMEOUT_STORE_CHUNKS", 15),
    "find_chunks": env_float("CITELOOM_TIMEOUT_FIND_CHUNKS", 8),
    "query_hybrid": env_float("CITELOOM_TIMEOUT_QUERY_HYBRID", 15),
    "inspect_collection": env_float("CITELOOM_TIMEOUT_INSPECT_COLLECTION", 5),
    "list_projects": env_float("CITELOOM_TIMEOUT_LIST_PROJECTS", 2),
}
CITELOOM_MAX_CHARS_PER_CHUNK = env_int("CITELOOM_MAX_CHARS_PER_CHUNK", 1800)
CITELOOM_MAX_TOP_K = env_int("CITELOOM_MAX_TOP_K", 20)
CITELOOM_BATCH_MIN = env_int("CITELOOM_BATCH_MIN", 100)
CITELOOM_BATCH_MAX = env_int("CITELOOM_BATCH_MAX", 500)
# store_chunks bodies carry vectors (500 x 384 floats is about 4 MB): the citeloom path takes this much.
CITELOOM_MAX_BODY_BYTES = env_int("CITELOOM_MAX_BODY_BYTES", 32 * 1024 * 1024)
