#!/usr/bin/env python
"""Retrieval quality and latency of a corpus directory, end to end, in one line.

    python bench/eval.py --corpus corpus/sample_docs --suite corpus/sample_docs_eval.json
    python bench/eval.py --corpus ../shared/bench/k8s/corpus --suite ../shared/bench/k8s/dev.jsonl --provider local
    python bench/eval.py --corpus ../shared/bench/scale/corpus-all --suite ../shared/bench/scale/queries.jsonl \
        --filter ps_version=7.5

In a temporary directory (its own SQLite database and index root, so nothing of the
developer's setup is touched): register the corpus, build it (full), import the suite, run it
in-process through the docs profile's tools, start a gunicorn server on a free port, run the
same suite over HTTP against its /mcp/, and print ONE summary line to stdout (progress goes to
stderr). `--json FILE` also writes both runs' metrics and latency.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _configure(work: Path, provider: str) -> dict[str, str]:
    """Environment for this process and the server: set before django.setup()."""
    env = {
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "DOCSMCP_INDEX_ROOT": str(work / "indexes"),
        "DOCSMCP_EMBEDDING_PROVIDER": provider,
        "DOCSMCP_DEFAULT_CORPUS": "bench",
        "MCP_RATE_LIMIT_PER_MINUTE": "100000000",  # a benchmark is not abuse
        "MCP_RATE_LIMIT_REDIS_URL": "",
        "MCP_AUTH_REQUIRED": "false",
        "CELERY_BROKER_URL": "",
        "LANCE_LOG": "error",
        "DOCSMCP_LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    return env


def _start_server(env: dict[str, str], port: int, workers: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "gunicorn", "docsmcp_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
           "--workers", str(workers), "--threads", "1", "--timeout", "120", "--log-level", "warning"]
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=fh, stderr=subprocess.STDOUT)


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server not healthy at {url} after {timeout:.0f}s {log.read_text()[-2000:]}".strip())


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _bar(label: str):
    from tqdm import tqdm

    bar = tqdm(total=0, desc=label, unit="case", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)

    def progress(done: int, total: int) -> None:
        bar.total, bar.n = total, done
        bar.refresh()

    return bar, progress


def _fmt(value, digits=3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_line(label: str, build, local, remote, http_error: str = "") -> str:
    def level(run, name):
        agg = (run.metrics.get("overall") or {}).get(name)
        if not agg:
            return f"{name} -"
        return (f"{name} MRR@10 {_fmt(agg['mrr@10'])} nDCG@10 {_fmt(agg['ndcg@10'])} R@10 {_fmt(agg['recall@10'])} "
                f"Hit@1 {_fmt(agg['hit@1'])}")

    def lat(run):
        if run is None or run.status != "complete":
            return f"failed ({(run.error if run else http_error or 'not run')[:80]})"
        s = run.latency.get("search") or {}
        return f"p50 {_fmt(s.get('p50'), 1)} p95 {_fmt(s.get('p95'), 1)} ms"

    overall = local.metrics.get("overall") or {}
    zero = overall.get("unanswerable") or overall.get("zero_result")
    coverage = overall.get("coverage")
    return " | ".join([
        f"{label}: {build.stats.get('total_chunks')} chunks, build {build.timings.get('total', 0):.1f}s "
        f"({build.embedding_provider})",
        f"{overall.get('cases')} cases, {overall.get('errors')} errors"
        + (f", unanswerable ok {_fmt(zero['accuracy'])}" if zero else "")
        + (f", coverage P {_fmt(coverage.get('precision'))} R {_fmt(coverage.get('recall'))}" if coverage else ""),
        level(local, "chunk"), level(local, "file"),
        f"in-process {lat(local)}", f"http {lat(remote)}",
    ])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="directory of markdown (with .docs-mcp.json manifests)")
    parser.add_argument("--suite", required=True, help="case file, JSON or JSONL, either spelling")
    parser.add_argument("--provider", default="none", choices=["none", "hash", "local", "openai"])
    parser.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                        help="filter sent with every case (repeatable)")
    parser.add_argument("--match", choices=["exact", "leaf"], default="leaf",
                        help="chunk matching (default leaf, as ../shared/bench/harness/mcp_eval.py)")
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers for the HTTP run")
    parser.add_argument("--server-timeout", type=float, default=300, help="seconds to wait for the server to boot")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP run")
    parser.add_argument("--label", help="name in the summary line (default: the corpus directory's name)")
    parser.add_argument("--json", help="write both runs' metrics and latency to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (printed to stderr)")
    args = parser.parse_args(argv)
    corpus_dir, suite_file = Path(args.corpus).resolve(), Path(args.suite).resolve()
    filters = {}
    for item in args.filter:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--filter expects KEY=VALUE, got {item!r}")
        filters[key] = value

    work = Path(tempfile.mkdtemp(prefix="docsmcp-bench-eval-"))
    env = _configure(work, args.provider)
    server = None
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from corpus.execution import build_execute
        from corpus.models import BuildRun
        from corpus.progress import StageBars
        from corpus.services import build_request, corpus_create
        from evals.services import eval_run, suite_import

        call_command("migrate", verbosity=0)
        corpus = corpus_create(name="bench", source_dir=str(corpus_dir), any_root=True,
                               corpus_settings={"embedding_provider": args.provider})
        print(f"building {corpus_dir} ({args.provider}) in {work} ...", file=sys.stderr)
        bars = StageBars()
        try:
            build = build_execute(build=build_request(corpus=corpus, kind=BuildRun.KIND_FULL), echo=bars)
        finally:
            bars.close()
        if build.status != BuildRun.COMPLETE:
            print(f"build {build.status}: {build.error}", file=sys.stderr)
            return 1
        corpus.refresh_from_db()
        suite = suite_import(name="bench", path=suite_file, corpus=corpus, match_mode=args.match)

        bar, progress = _bar("in-process")
        local = eval_run(corpus=corpus, suite=suite, max_rounds=args.max_rounds, extra_filters=filters,
                         progress=progress, requested_by="bench/eval.py")
        bar.close()
        if local.status != "complete":
            print(f"in-process run failed: {local.error}", file=sys.stderr)
            return 1
        remote, http_error = None, "skipped (--no-http)" if args.no_http else ""
        if not args.no_http:
            port = _free_port()
            log = work / "server.log"
            server = _start_server(env, port, args.workers, log)
            try:
                _wait_healthy(f"http://127.0.0.1:{port}/health/", server, log, args.server_timeout)
            except RuntimeError as exc:
                http_error = str(exc)
                print(http_error, file=sys.stderr)
            else:
                bar, progress = _bar("http")
                remote = eval_run(corpus=corpus, suite=suite, mode="http", max_rounds=args.max_rounds,
                                  url=f"http://127.0.0.1:{port}/mcp/c/bench/", extra_filters=filters, baseline=local,
                                  progress=progress, requested_by="bench/eval.py")
                bar.close()
        line = summary_line(args.label or corpus_dir.name, build, local, remote, http_error)
        print(line, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({
                "summary": line, "corpus": str(corpus_dir), "suite": str(suite_file), "provider": args.provider,
                "filters": filters, "match": args.match, "build": {"stats": build.stats, "timings": build.timings},
                "in_process": {"metrics": local.metrics, "latency": local.latency},
                "http": {"metrics": remote.metrics, "latency": remote.latency, "delta": remote.delta} if remote else None,
            }, indent=2) + "\n", encoding="utf-8")
        return 0 if args.no_http or (remote is not None and remote.status == "complete") else 1
    finally:
        if server is not None:
            _stop(server)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
