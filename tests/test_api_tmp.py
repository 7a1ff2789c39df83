import json
from tests.api_helpers import call
def test_x(client, sample_corpus):
    r = call(client, "get", "/corpora/sample/search?query=RateLimitError&limit=2"); print(r.status_code, json.dumps(r.json(), indent=1)[:1500])
    c = r.json()["next_cursor"]
    r = call(client, "post", "/corpora/sample/search", {"query": "RateLimitError", "cursor": c}); print(r.status_code, [h["chunk_id"] for h in r.json()["hits"]])
    r = call(client, "post", "/corpora/sample/search", {"query": "retries", "filters": {"language": "python"}, "limit": 3}); print(r.status_code, r.json())
    r = call(client, "post", "/corpora/sample/search", {"query": "retries", "filters": {"language": "cobol"}}); print(r.status_code, r.json())
    r = call(client, "post", "/corpora/sample/search", {"query": "zzqqxx", "filters": {"language": "go"}}); print(r.status_code, r.json())
    r = call(client, "post", "/corpora/sample/search", {"query": "retries", "cursor": "abc"}); print(r.status_code, r.json())
    r = call(client, "post", "/corpora/sample/search", {"query": "   "}); print(r.status_code, r.json())
