"""Memory of a running demo: RSS and PSS of every process `manage.py serve` starts, after a search
reached each worker.

    python bench/memory.py [--corpus DIR] [--provider none|hash|local] [--index-root DIR]
                           [--workers N] [--no-worker] [--json OUT] [--port N]

It sets up a fresh SQLite database and the corpus like bench/http_load.py (reusing a build under
`--index-root` made with the same provider), starts `manage.py serve` as scripts/demo.sh does (the
Celery worker beside gunicorn unless `--no-worker`; `--workers` defaults to serve's own default),
waits until every worker is warm, sends `search_docs` calls from 4 x workers fresh connections so
each worker answers some, and prints, per process (the serve parent, the gunicorn master, each
worker, the Celery worker), RSS and PSS from /proc/<pid>/smaps_rollup, then their sums.

PSS divides each page among the processes that map it: the sum of PSS is what the demo costs the
machine, where the sum of RSS counts a page shared by the workers once per worker. Linux only.

PSS also divides a page with processes outside the demo: on a machine where other programs run the
same virtualenv (tests, other servers), the pages of LanceDB's, Arrow's and onnxruntime's libraries
are shared with them and the demo's PSS falls and rises with what else runs (by 50-100 MiB on the
shared benchmark machine). The `alone` column is the PSS the demo would have if nothing outside it
shared a page: each resident page, found by its physical frame in /proc/PID/pagemap, divided among
the demo's processes that map it; its total is the number of distinct pages the demo holds. It
needs root (without it the kernel hides the frames and the column is left out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from http_load import (  # noqa: E402
    DEFAULT_CORPUS,
    ROOT,
    McpClient,
    configure_django,
    corpus_name,
    free_port,
    prepare_index,
    stop_server,
)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def memory(pid: int) -> dict[str, float]:
    """RSS and PSS in MB (0 for a process that has gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return {"rss": 0.0, "pss": 0.0}
    kb = dict(re.findall(r"^(Rss|Pss):\s+(\d+) kB", text, re.M))
    return {"rss": int(kb["Rss"]) / 1024, "pss": int(kb["Pss"]) / 1024}


def _frames(pid: int) -> set[int]:
    """Physical frames of the resident pages `pid` maps (empty without root: the kernel reports 0)."""
    found: set[int] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                if line.rstrip().endswith("[vsyscall]"):
                    continue
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                pagemap.seek(start // 4096 * 8)
                for (entry,) in struct.iter_unpack("<Q", pagemap.read((end - start) // 4096 * 8)):
                    if entry >> 63 & 1:
                        found.add(entry & ((1 << 55) - 1))
    except OSError:
        return set()
    found.discard(0)
    return found


def alone(pids: list[int]) -> tuple[dict[int, float], float] | None:
    """Each process's PSS in MB counting only the sharing among `pids`, and the pages of all of them
    together; None when the frames cannot be read (not root)."""
    frames = {pid: _frames(pid) for pid in pids}
    sharers: Counter[int] = Counter()
    for found in frames.values():
        sharers.update(found)
    if not sharers:
        return None
    per = {pid: sum(1 / sharers[f] for f in found) * 4096 / 2**20 for pid, found in frames.items()}
    return per, len(sharers) * 4096 / 2**20


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def processes(serve: int) -> list[tuple[str, int]]:
    """(role, pid) of serve and its descendants, each named by what it is."""
    # serve execs into its supervising process (common/supervise.py), whose command line names gunicorn's
    if "gunicorn" in command(serve) and "common.supervise" not in command(serve):  # gunicorn itself
        return [("gunicorn master", serve)] + [(f"worker {i + 1}", w) for i, w in enumerate(sorted(children(serve)))]
    found = [("serve parent", serve)]
    for child in children(serve):
        if "gunicorn" in command(child) and "celery" not in command(child):
            found.append(("gunicorn master", child))
            found += [(f"worker {i + 1}", w) for i, w in enumerate(sorted(children(child)))]
        elif "celery" in command(child):
            found.append(("celery worker", child))
            found += [("celery child", c) for c in children(child)]
        else:
            found.append(("other", child))
    return found


def gunicorn_master(serve: int) -> int:
    if "gunicorn" in command(serve) and "common.supervise" not in command(serve):
        return serve
    return next((c for c in children(serve) if "gunicorn" in command(c)), 0)


def wait_ready(url: str, serve: subprocess.Popen, workers: int, log: Path) -> None:
    """Until /health/ answers 200 (every worker warm) and the workers stop using CPU."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            raise SystemExit(f"serve exited with {serve.returncode}; see {log}")
        try:
            if httpx.get(url.replace("/mcp/", "/health/"), timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    else:
        raise SystemExit(f"serve did not answer /health/ within 600s; see {log}")
    while len(children(gunicorn_master(serve.pid))) < workers and time.monotonic() < deadline:
        time.sleep(0.5)


def search_everywhere(url: str, clients: int) -> int:
    """One search_docs call from each of `clients` fresh connections at once; returns the errors."""

    def one(i: int) -> int:
        client = McpClient(url)
        try:
            return 1 if client.search({"query": f"how do I configure search {i}", "limit": 5}) else 0
        except Exception:
            return 1
        finally:
            client.close()

    with ThreadPoolExecutor(clients) as pool:
        return sum(pool.map(one, range(clients)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="markdown corpus directory")
    ap.add_argument("--name", help="corpus name (default: from the directory name)")
    ap.add_argument("--provider", default="local", choices=["none", "hash", "local"])
    ap.add_argument("--index-root", type=Path, help="index root to reuse (or build into); default a temp dir")
    ap.add_argument("--workers", type=int, help="gunicorn workers (default: serve's default)")
    ap.add_argument("--no-worker", action="store_true", help="no Celery worker beside gunicorn")
    ap.add_argument("--build", action="store_true",
                    help="then queue a full build of the corpus to the Celery worker and, once it is done, "
                         "print the table again (what the worker keeps after a build)")
    ap.add_argument("--json", type=Path, help="also write the table to this file")
    ap.add_argument("--port", type=int, help="the port serve listens on (default: a free one)")
    args = ap.parse_args(argv)
    corpus = args.corpus.resolve()
    name = corpus_name(corpus, args.name)
    workdir = Path(tempfile.mkdtemp(prefix="docsmcp-bench-memory-"))
    index_root = (args.index_root or workdir / "indexes").resolve()
    os.environ["DOCSMCP_HOME"] = str(workdir)  # the filesystem queue this process and serve's worker share
    env = configure_django(workdir, index_root, name)
    env.pop("CELERY_BROKER_URL")  # serve's default: a filesystem queue and a Celery worker beside it
    env["DOCSMCP_HOME"] = str(workdir)
    prepare_index(corpus, name, args.provider, index_root)
    port = args.port or free_port()
    url = f"http://127.0.0.1:{port}/mcp/"
    argv_serve = [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if args.workers:
        argv_serve += ["--workers", str(args.workers)]
    if args.no_worker:
        argv_serve.append("--no-worker")
    log = workdir / "server.log"
    child_env = {**os.environ, **env}
    child_env.pop("CELERY_BROKER_URL", None)
    with open(log, "wb") as out:
        serve = subprocess.Popen(argv_serve, cwd=ROOT, env=child_env, stdout=out, stderr=subprocess.STDOUT)
    try:
        from mcp_endpoint.management.commands.serve import default_workers

        workers = args.workers or default_workers()
        wait_ready(url, serve, workers, log)
        errors = search_everywhere(url, 4 * workers)
        time.sleep(2)
        tables = [("after the first searches", measured(processes(serve.pid)))]
        if args.build:
            tables.append((f"after a queued build ({queued_build(name)})", measured(processes(serve.pid))))
    finally:
        stop_server(serve)
    print(f"corpus {name}, provider {args.provider}, {workers} workers, search errors {errors}")
    for title, rows in tables:
        print(title)
        print_table(rows)
    if args.json:
        args.json.write_text(json.dumps({"corpus": name, "provider": args.provider, "workers": workers, "tables": [
            {"when": t, "processes": [{"role": r, "pid": p, **m} for r, p, m in rows]} for t, rows in tables]},
            indent=2))
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if errors else 0


def measured(found: list[tuple[str, int]]) -> list[tuple[str, int, dict[str, float]]]:
    rows = [(role, pid, memory(pid)) for role, pid in found]
    shared_inside = alone([pid for _, pid, _ in rows])
    if shared_inside is not None:
        for _, pid, mem in rows:
            mem["alone"] = shared_inside[0][pid]
    return rows


def queued_build(name: str) -> str:
    """A full build of `name` through the queue, as the admin starts one; waits until it ends."""
    from django.db import transaction

    from corpus.models import BuildRun
    from corpus.selectors import corpus_get
    from corpus.services import build_start

    with transaction.atomic():
        build = build_start(corpus=corpus_get(name), kind=BuildRun.KIND_FULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        build.refresh_from_db()
        if build.status not in (BuildRun.QUEUED, BuildRun.RUNNING):
            time.sleep(2)  # the worker's task_postrun runs after the status is saved
            return build.status
        time.sleep(1)
    return "still running after 600 s"


def print_table(rows: list[tuple[str, int, dict[str, float]]]) -> None:
    with_alone = all("alone" in mem for _, _, mem in rows)
    print(f"{'process':<16} {'pid':>7} {'RSS MB':>8} {'PSS MB':>8}" + (f" {'alone MB':>9}" if with_alone else ""))
    for role, pid, mem in rows:
        print(f"{role:<16} {pid:>7} {mem['rss']:8.1f} {mem['pss']:8.1f}" + (f" {mem['alone']:9.1f}" if with_alone else ""))
    served = [mem for role, _, mem in rows if role.startswith("worker")]
    total_pss = sum(mem["pss"] for _, _, mem in rows)
    total_rss = sum(mem["rss"] for _, _, mem in rows)
    workers_pss = sum(m["pss"] for m in served)
    one_rss = max((m["rss"] for m in served), default=0.0)
    total_alone = f" {sum(mem['alone'] for _, _, mem in rows):9.1f}" if with_alone else ""
    print(f"{'all processes':<16} {'':>7} {total_rss:8.1f} {total_pss:8.1f}{total_alone}")
    print(f"workers: PSS sum {workers_pss:.1f} MB, largest RSS {one_rss:.1f} MB, "
          f"PSS sum / one worker's RSS = {workers_pss / one_rss if one_rss else float('nan'):.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
