"""llms.txt and document resources on a real corpus: what the first request for each file costs, what
later ones cost, and what resource links add to a search.

    python bench/llmstxt.py [--corpus DIR] [--repeat 50] [--json OUT]

Builds the corpus (default ../shared/bench/k8s/corpus, 722 pages) without embeddings into a temporary
SQLite database and index root, then serves requests in process through Django's test client (no
HTTP server, so the figures are the view and the index, not the network):
- GET /c/k8s/llms.txt on a warmed build (as `serve` warms it): the first request (renders from every
  page) and the median of later ones;
  the median of a revalidation with If-None-Match (304); llms-full.txt (streamed; time and bytes);
  one page's markdown.
- POST /mcp/c/k8s/: resources/list (first page, then a page by cursor), resources/read of one page,
  and search_docs at 2025-11-25 (text block and resource links) against 2025-03-26 (text block alone).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_CORPUS = ROOT.parent / "shared" / "bench" / "k8s" / "corpus"


def timed(call, repeat: int) -> float:
    """Median milliseconds of `repeat` calls."""
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        samples.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(samples), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-llmstxt-"))
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "DOCSMCP_INDEX_ROOT": str(workdir / "indexes"),
        "DOCSMCP_HOME": str(workdir),
        "MCP_RATE_LIMIT_PER_MINUTE": "0",
    })
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    began = time.perf_counter()
    call_command("build_index", "--corpus", "k8s", "--source", str(args.corpus), "--embedding-provider", "none",
                 "--full", "--no-progress", stdout=io.StringIO())
    print(f"built in {time.perf_counter() - began:.1f}s", file=sys.stderr)
    from corpus.serving import serve_warm

    serve_warm(watch=False)  # as a serving worker does before its first request: the index is open
    client = Client()
    client.get("/c/k8s/no-such-page.md")  # the process's first request loads the URLconf and the views
    out: dict[str, object] = {"corpus": str(args.corpus)}

    began = time.perf_counter()
    first = client.get("/c/k8s/llms.txt")
    out["llms_txt_first_ms"] = round((time.perf_counter() - began) * 1000, 1)
    out["llms_txt_bytes"] = len(first.content)
    out["llms_txt_pages"] = first.content.decode().count("\n- [")
    out["llms_txt_cached_ms"] = timed(lambda: client.get("/c/k8s/llms.txt"), args.repeat)
    etag = first["ETag"]
    out["llms_txt_304_ms"] = timed(lambda: client.get("/c/k8s/llms.txt", HTTP_IF_NONE_MATCH=etag), args.repeat)

    began = time.perf_counter()
    full = client.get("/c/k8s/llms-full.txt")
    body = b"".join(full.streaming_content)
    out["llms_full_ms"] = round((time.perf_counter() - began) * 1000, 1)
    out["llms_full_bytes"] = len(body)
    page = first.content.decode().split("\n- [", 2)[1].split("](", 1)[1].split(")", 1)[0].split("/c/k8s/", 1)[1]
    out["page_md_ms"] = timed(lambda: client.get(f"/c/k8s/{page}"), args.repeat)

    def rpc(method: str, params: dict, version: str = "2025-11-25") -> dict:
        response = client.post("/mcp/c/k8s/", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                               content_type="application/json", HTTP_ACCEPT="application/json, text/event-stream",
                               HTTP_MCP_PROTOCOL_VERSION=version)
        return response.json()["result"]

    listed = rpc("resources/list", {})
    out["resources_list_first_ms"] = timed(lambda: rpc("resources/list", {}), args.repeat)
    cursor = listed.get("nextCursor")
    if cursor:
        out["resources_list_next_ms"] = timed(lambda: rpc("resources/list", {"cursor": cursor}), args.repeat)
    uri = listed["resources"][0]["uri"]
    out["resources_read_ms"] = timed(lambda: rpc("resources/read", {"uri": uri}), args.repeat)
    search = {"name": "search_docs", "arguments": {"query": "how do I roll back a deployment"}}
    rpc("tools/call", search)
    out["search_with_links_ms"] = timed(lambda: rpc("tools/call", search), args.repeat)
    out["search_text_only_ms"] = timed(lambda: rpc("tools/call", search, "2025-03-26"), args.repeat)
    out["links_per_search"] = sum(1 for b in rpc("tools/call", search)["content"] if b["type"] == "resource_link")
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
