"""Freshness benchmark: from a one-file git push to the new text served over /mcp/, and what a second version costs.

    python bench/freshness.py [--corpus DIR] [--name NAME] [--provider none|hash|local] [--broker redis://...]
                              [--pushes N] [--changed-fraction 0.05] [--no-versions] [--keep DIR] [--json OUT]

What it does, in order (progress on stderr, figures on stdout):
1. Makes a git repository of the corpus (default ../shared/bench/k8s/corpus) in a temporary
   directory, one commit, and points Django at a fresh SQLite database there.
2. `manage.py build_index --corpus k8s --git file://... --full`: the first version, timed, and its
   index directory's disk use.
3. A second version sharing all but `--changed-fraction` of the files (a branch where that many files
   got a new paragraph) built as `k8s@v2`: its build time, and the disk of both versions counted
   together (`du`, so hard-linked files count once). Printed as ratios to one version. Skipped with
   `--no-versions`, for a run that measures only the pushes.
4. Starts `manage.py serve --no-worker` (gunicorn, 1 worker) and a Celery worker on the Redis
   broker, warms both up (a search, and a first webhook build).
5. `--pushes` times: appends a paragraph with a new word to one file, commits, POSTs a signed
   GitHub push to /api/v1/hooks/git/k8s, and polls `search_docs` over /mcp/ every 50 ms until a
   hit of the top 3 is that file at the pushed commit (its `revision`). Prints each latency as it
   comes (stderr) and the median and max.

`--name` names the corpus (default `k8s`; the webhook is /api/v1/hooks/git/NAME), e.g. `--corpus
corpus/sample_docs --name sample`.

`--seed-cache DIR` copies an embedding cache (`<index root>/k8s/embedding-cache` of an earlier run)
in before building, so a `local` run spends its time on pushes rather than on embedding the corpus
again; the version figures of such a run are then not those of a cold build.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # not bench/: its insights.py would stand in for the insights app

import httpx  # noqa: E402
from tqdm import tqdm  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "bench" / "k8s" / "corpus"
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@localhost"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True,
                          capture_output=True, text=True).stdout.strip()


def du(*paths: Path) -> int:
    """Bytes on disk of the paths together; a hard-linked file counts once."""
    out = subprocess.run(["du", "-s", "-B1", "-c", *map(str, paths)], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1].split()[0])


def make_repo(corpus: Path, repo: Path) -> None:
    shutil.copytree(corpus, repo)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "docs")


def configure(workdir: Path, provider: str, broker: str, name: str) -> dict[str, str]:
    env = {
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "DOCSMCP_INDEX_ROOT": str(workdir / "indexes"),
        "DOCSMCP_GIT_CACHE_DIR": str(workdir / "git-cache"),
        "DOCSMCP_EMBEDDING_PROVIDER": provider,
        "DOCSMCP_DEFAULT_CORPUS": name,
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_DEFAULT_QUEUE": f"freshness-{uuid.uuid4().hex[:8]}",
        "MCP_RATE_LIMIT_PER_MINUTE": "0",
        "MCP_RATE_LIMIT_REDIS_URL": "",
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    os.environ.update(env)
    import django

    django.setup()
    return env


def timed_build(*args: str) -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("build_index", *args)
    return time.perf_counter() - started


def versions(repo: Path, workdir: Path, fraction: float, provider: str, *, name: str = "k8s",
             second: bool = True) -> dict:
    from corpus.models import Corpus

    first = timed_build("--corpus", f"{name}@v1", "--git", repo.as_uri(), "--ref", "main",
                        "--embedding-provider", provider)
    one = Corpus.objects.get(name=name)
    if not second:
        return {"files": sum(1 for p in repo.rglob("*.md") if ".git" not in p.parts), "one_version_s": round(first, 2)}
    one_dir = Path(one.active_build.index_path).parent.parent
    disk_one = du(one_dir / "builds")
    files = sorted(p for p in repo.rglob("*.md") if ".git" not in p.parts)
    changed = files[:: max(1, round(1 / fraction))]
    git(repo, "checkout", "--quiet", "-b", "v2")
    for path in changed:
        path.write_text(path.read_text() + "\n\nThis paragraph exists in version 2 only.\n")
    git(repo, "commit", "--quiet", "-am", "v2")
    git(repo, "checkout", "--quiet", "main")
    second = timed_build("--corpus", f"{name}@v2", "--git", repo.as_uri(), "--ref", "v2")
    two_dir = Path(Corpus.objects.get(name=f"{name}@v2").active_build.index_path).parent.parent
    disk_two = du(one_dir / "builds", two_dir / "builds")
    return {"files": len(files), "changed_files": len(changed), "one_version_s": round(first, 2),
            "second_version_s": round(second, 2), "time_ratio": round((first + second) / first, 3),
            "disk_one_mb": round(disk_one / 1e6, 1), "disk_two_mb": round(disk_two / 1e6, 1),
            "disk_ratio": round(disk_two / disk_one, 3)}


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def mcp_search(http: httpx.Client, url: str, query: str) -> list[dict]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": query, "limit": 3}}}
    response = http.post(url, json=body, headers={"Accept": "application/json, text/event-stream",
                                                  "MCP-Protocol-Version": "2025-06-18"})
    result = response.json().get("result") or {}
    return (result.get("structuredContent") or {}).get("hits") or []


def push(http: httpx.Client, base: str, secret: str, commit: str, name: str) -> None:
    body = json.dumps({"ref": "refs/heads/main", "after": commit, "repository": {"default_branch": "main"}}).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response = http.post(f"{base}/api/v1/hooks/git/{name}", content=body,
                         headers={"Content-Type": "application/json", "X-GitHub-Event": "push",
                                  "X-Hub-Signature-256": f"sha256={signature}"})
    if response.status_code != 202:
        raise SystemExit(f"webhook answered {response.status_code}: {response.text}")


def one_push(http: httpx.Client, base: str, secret: str, repo: Path, target: Path, timeout: float,
             name: str) -> float:
    word = f"zq{uuid.uuid4().hex[:10]}"
    target.write_text(target.read_text() + f"\n\n{word} marks this push.\n")
    commit = git(repo, "commit", "--quiet", "-am", word) or git(repo, "rev-parse", "HEAD")
    relpath = target.relative_to(repo).as_posix()
    started = time.perf_counter()
    push(http, base, secret, commit, name)
    while time.perf_counter() - started < timeout:
        hits = mcp_search(http, f"{base}/mcp/", word)
        if any(h["filepath"] == relpath and h["revision"] == commit for h in hits):
            return time.perf_counter() - started
        time.sleep(0.05)
    raise SystemExit(f"the pushed text was not served within {timeout}s")


def wait_health(base: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited; see {log}")
        try:
            if httpx.get(f"{base}/health/", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"server not up after 600s; see {log}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--name", default="k8s", help="the corpus's name (its webhook: /api/v1/hooks/git/NAME)")
    parser.add_argument("--no-versions", action="store_true", help="build one version only, then push")
    parser.add_argument("--provider", default="none")
    parser.add_argument("--broker", default=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/11"))
    parser.add_argument("--pushes", type=int, default=5)
    parser.add_argument("--changed-fraction", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one, removed)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--seed-cache", type=Path, help="an embedding cache directory to start from")
    args = parser.parse_args(argv)

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="docsmcp-freshness-"))
    workdir.mkdir(parents=True, exist_ok=True)
    repo = workdir / "repo"
    print(f"work directory {workdir}", file=sys.stderr)
    make_repo(args.corpus, repo)
    env = configure(workdir, args.provider, args.broker, args.name)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if args.seed_cache:
        shutil.copytree(args.seed_cache, workdir / "indexes" / args.name / "embedding-cache")
    report = {"provider": args.provider, "corpus": args.name, "load_average": [round(x, 2) for x in os.getloadavg()],
              "versions": versions(repo, workdir, args.changed_fraction, args.provider, name=args.name,
                                   second=not args.no_versions)}
    print(json.dumps(report["versions"]), flush=True)

    from corpus.models import Corpus
    from corpus.webhooks import hook_secret

    secret = hook_secret(Corpus.objects.get(name=args.name))
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", args.port))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = start([sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port), "--no-worker",
                    "--workers", "1", "--threads", "4"], env, workdir / "server.log")
    worker = start([str(Path(sys.executable).with_name("celery")), "-A", "common", "worker", "--loglevel",
                    "INFO", "-Q", env["CELERY_TASK_DEFAULT_QUEUE"], "--without-gossip", "--without-mingle"],
                   env, workdir / "worker.log")
    latencies: list[float] = []
    try:
        wait_health(base, server, workdir / "server.log")
        files = sorted(p for p in repo.rglob("*.md") if ".git" not in p.parts)
        target = max(files, key=lambda p: p.stat().st_size)
        with httpx.Client(timeout=60) as http:
            mcp_search(http, f"{base}/mcp/", "pod")  # loads the index (and the query model) in the server
            warm = one_push(http, base, secret, repo, files[0], args.timeout, args.name)  # the worker's first imports
            print(f"warm-up push served in {warm:.2f}s", file=sys.stderr)
            for n in tqdm(range(args.pushes), desc="push -> served", file=sys.stderr):
                latencies.append(one_push(http, base, secret, repo, target, args.timeout, args.name))
                tqdm.write(f"push {n + 1}: served in {latencies[-1]:.2f}s (load average {os.getloadavg()[0]:.1f})",
                           file=sys.stderr)
    finally:
        stop(server)
        stop(worker)
    report["push_to_served_s"] = [round(x, 3) for x in latencies]
    report["push_to_served_median_s"] = round(statistics.median(latencies), 3)
    report["push_to_served_max_s"] = round(max(latencies), 3)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({k: v for k, v in report.items() if k != "versions"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if args.keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
