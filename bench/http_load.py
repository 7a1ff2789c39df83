"""HTTP benchmark: requests/s and p50/p95/p99 of `search_docs` over MCP against a production-style
server (gunicorn, several workers), at several client concurrencies, next to the engine alone.

    python bench/http_load.py [--corpus DIR] [--provider none|hash|local] [--index-root DIR]
                         [--queries FILE.jsonl] [--workers N] [--threads N] [--concurrency 1,8,32]
                         [--requests N] [--trials N] [--limit 10] [--json OUT]

What it does, in order:
1. Points Django at a fresh SQLite database in a temporary directory and migrates it.
2. Builds the corpus with `manage.py build_index` (progress bars), or reuses the newest build
   under `--index-root DIR/<name>/builds/` made with the same embedding provider, and activates it.
3. Starts `manage.py serve --workers N` (gunicorn) on a free port with the rate limit off
   (`MCP_RATE_LIMIT_PER_MINUTE=0`); its log goes to `server.log` in the temporary directory.
4. Warms every worker up. Then, per trial: times the engine alone (`retrieval.search.engine.search()` in
   this process, one query at a time, `--requests` calls), and for each concurrency C runs
   `--requests` `tools/call search_docs` calls from C threads, each with its own keep-alive
   `httpx.Client` that did the `initialize` handshake (protocol 2025-06-18) first. Latency is the
   wall time of one call. Prints one line for the engine and one per concurrency level, then
   the memory of the largest worker (RSS, peak RSS, and PSS, which splits shared pages).

`--first-pass` measures what a new server's first clients get: it starts the server, waits only
until /health/ answers 200 (what a load balancer waits for), and at once runs one pass of
`--requests` calls from `--concurrency` clients (default 8), with no warm-up; then a warmed pass;
then a pass during which `manage.py build_index` activates a new build of the corpus. It prints
p50, p99 and the slowest call of each pass, and the first and activation passes' p99 over the
warmed pass's.

`--serve-only` stops after step 3 and serves until Ctrl-C / SIGTERM, for other clients such as
../shared/bench/harness/mcp_eval.py.

Any failed call (transport error, HTTP status other than 200, JSON-RPC error, `isError`, no
hits list) is an error; the exit status is 1 when there was any. `--trials N` measures each row
N times and keeps the trial with the lowest p50 (for a machine shared with other jobs).
`overhead_p50` is HTTP p50 minus engine p50: what the transport, Django, JSON and the network
stack add to one search. Above one client per worker thread it also includes queueing.
`cpu=...ms/call` is the CPU time (user + system, from /proc) the gunicorn master and its workers
spent during a row, per call; on the engine line, this process's CPU per search. Other jobs on
the machine move it far less than latency or calls/s, so it is the figure to compare two trees by.

Queries: JSONL rows `{"query", "filters"?}` (the shared bench format), or a JSON array of the
same (the default, corpus/sample_docs_eval.json). Filters on keys the build does not have are
dropped, so a query file written for another corpus still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do

import httpx  # noqa: E402
from tqdm import tqdm  # noqa: E402

DEFAULT_CORPUS = ROOT / "corpus" / "sample_docs"
DEFAULT_QUERIES = ROOT / "corpus" / "sample_docs_eval.json"
PROTOCOL = "2025-06-18"
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL,
}


# --- statistics ---------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class Row:
    label: str
    latencies: list[float]  # seconds, successful calls only
    wall: float  # seconds for the whole row
    errors: int = 0
    concurrency: int = 1
    cpu: float | None = None  # CPU seconds the server's processes (or the engine's) spent on the row

    @property
    def cpu_ms(self) -> float:
        calls = len(self.latencies) + self.errors
        return self.cpu * 1000 / calls if self.cpu is not None and calls else float("nan")

    def ms(self, p: float) -> float:
        return percentile(self.latencies, p) * 1000 if self.latencies else float("nan")

    @property
    def rate(self) -> float:
        return (len(self.latencies) + self.errors) / self.wall if self.wall else 0.0

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "concurrency": self.concurrency,
            "n": len(self.latencies),
            "errors": self.errors,
            "p50_ms": round(self.ms(50), 3),
            "p95_ms": round(self.ms(95), 3),
            "p99_ms": round(self.ms(99), 3),
            "per_s": round(self.rate, 1),
            "cpu_ms_per_call": round(self.cpu_ms, 3),
        }


def best(trials: list[Row]) -> Row:
    """The trial with the lowest p50; a trial with errors never wins over one without."""
    return min(trials, key=lambda r: (r.errors > 0, r.ms(50)))


# --- setup: database, index, server ---------------------------------------------------------------


def corpus_name(corpus: Path, given: str | None) -> str:
    if given:
        return given
    base = corpus.resolve()
    if base.name in ("corpus", "docs", "src") and base.parent.name:
        base = base.parent
    return re.sub(r"[^a-z0-9_-]+", "-", base.name.lower()).strip("-_")[:100] or "bench"


def configure_django(workdir: Path, index_root: Path, name: str) -> dict[str, str]:
    """Environment shared by this process and the server, then django.setup()."""
    env = {
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "DOCSMCP_INDEX_ROOT": str(index_root),
        "DOCSMCP_DEFAULT_CORPUS": name,
        "MCP_RATE_LIMIT_PER_MINUTE": "0",
        "MCP_RATE_LIMIT_REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    os.environ.update(env)
    import django

    django.setup()
    return env


def _reusable_build(index_root: Path, name: str, provider: str) -> Path | None:
    from retrieval.errors import IndexUnavailable
    from retrieval.format.metadata import read_metadata

    candidates = sorted(
        (index_root / name / "builds").glob("*/metadata.json"), key=lambda p: p.stat().st_mtime
    )
    for meta in reversed(candidates):
        try:
            metadata = read_metadata(meta.parent)
        except IndexUnavailable:
            continue
        built_with = (metadata.embedding or {}).get("provider", "none")
        if built_with == provider:
            return meta.parent
    return None


def prepare_index(corpus: Path, name: str, provider: str, index_root: Path) -> Path:
    """Migrate the fresh database; register and activate a reused build, or build one."""
    from django.core.management import call_command

    from corpus.execution import build_activate
    from corpus.models import BuildRun
    from corpus.selectors import corpus_get
    from corpus.services import corpus_create
    from retrieval.format.metadata import read_metadata

    call_command("migrate", verbosity=0)
    reused = _reusable_build(index_root, name, provider)
    if reused is None:
        call_command(
            "build_index",
            "--corpus",
            name,
            "--source",
            str(corpus),
            "--embedding-provider",
            provider,
            "--full",
        )
        build = corpus_get(name).active_build
        return Path(build.index_path)
    metadata = read_metadata(reused)
    record = corpus_create(
        name=name,
        source_dir=str(corpus),
        any_root=True,
        description=metadata.corpus_description,
        corpus_settings={"embedding_provider": provider},
    )
    build = BuildRun.objects.create(
        corpus=record,
        build_id=metadata.build_id,
        kind=BuildRun.KIND_FULL,
        status=BuildRun.COMPLETE,
        index_path=str(reused),
        embedding_provider=provider,
        embedding=metadata.embedding,
        stats=metadata.stats,
    )
    build_activate(build=build)
    print(f"reusing build {reused}", flush=True)
    return reused


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(env: dict[str, str], port: int, workers: int, threads: int, log: Path,
                 settle: bool = True) -> subprocess.Popen:
    """Starts serve and waits for /health/ to answer 200; with `settle`, also until every worker is idle."""
    argv = [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port), "--no-worker"]
    argv += ["--workers", str(workers), "--threads", str(threads)]
    with open(log, "wb") as out:
        server = subprocess.Popen(
            argv, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 600  # a worker imports LanceDB: tens of seconds on a busy machine
    with tqdm(desc="server boot", unit="s", bar_format="{desc}: {elapsed}") as bar:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"server exited with {server.returncode}; see {log}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            bar.update()
            time.sleep(0.5)
        else:
            stop_server(server)
            raise SystemExit(f"server did not answer /health/ within 600s; see {log}")
        if settle:
            wait_workers_idle(server.pid, workers, deadline, bar)
    return server


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`: serve's supervising process, its gunicorn master, the workers."""
    try:
        children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [p for child in children for p in (child, *_descendants(child))]


def server_cpu(master: int | None) -> float | None:
    """CPU seconds (user + system) serve's processes (its supervisor, the gunicorn master and its workers)
    have used so far; None where /proc does not say. Load from other jobs moves it much less than it moves
    wall-clock figures."""
    if master is None or not Path(f"/proc/{master}/task/{master}/children").exists():
        return None
    total = 0
    for pid in [master, *_descendants(master)]:
        try:
            total += _cpu_ticks(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def wait_workers_idle(master: int, workers: int, deadline: float, bar: tqdm) -> None:
    """Until every worker has booted: at least `workers` processes below serve's (its gunicorn master and
    workers) and none of them burns CPU for a second."""
    if not Path(f"/proc/{master}/task/{master}/children").exists():
        return  # not Linux: the warm-up absorbs late boots
    last: dict[int, int] = {}
    while time.monotonic() < deadline:
        try:
            ticks = {pid: _cpu_ticks(pid) for pid in _descendants(master)}
        except (FileNotFoundError, ProcessLookupError):
            ticks = {}
        settled = len(ticks) >= workers and ticks.keys() == last.keys()
        if settled and all(ticks[pid] - last[pid] <= 2 for pid in ticks):
            return
        last = ticks
        bar.update()
        time.sleep(1)


def worker_memory(master: int) -> list[dict[str, float]]:
    """RSS, its peak (VmHWM) and PSS in MB of each process below serve's (its gunicorn master and the
    workers; the largest is a worker); PSS splits pages the workers share (the preloaded code) between
    them. Empty where /proc does not say."""
    out = []
    for pid in _descendants(master):
        try:
            status = Path(f"/proc/{pid}/status").read_text() + Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        kb = dict(re.findall(r"^(VmRSS|VmHWM|Pss):\s+(\d+) kB", status, re.M))
        out.append({"rss": int(kb["VmRSS"]) / 1024, "peak": int(kb["VmHWM"]) / 1024, "pss": int(kb["Pss"]) / 1024})
    return out


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)  # the gunicorn master (serve exec'd into it) stops its workers
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# --- queries -------------------------------------------------------------------------------------


def load_queries(path: Path, taxonomy: dict) -> list[dict]:
    text = path.read_text()
    if path.suffix == ".json":
        rows = json.loads(text)
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for row in rows:
        filters = {
            k: v for k, v in (row.get("filters") or {}).items() if k in taxonomy and v in taxonomy[k].values
        }
        out.append({"query": row["query"], "filters": filters})
    if not out:
        raise SystemExit(f"no queries in {path}")
    return out


# --- engine alone --------------------------------------------------------------------------------


def engine_row(index_path: Path, queries: list[dict], requests: int, limit: int) -> Row:
    from corpus.serving import active_index, cursor_secret, query_embedder
    from retrieval.search.engine import SearchRequest, search

    index = active_index()
    assert index.path.resolve() == index_path.resolve(), (index.path, index_path)
    embedder = query_embedder(index)
    secret = cursor_secret()
    latencies = []
    cpu_before = time.process_time()
    started = time.perf_counter()
    for i in tqdm(range(requests), desc="engine", unit="q", leave=False):
        q = queries[i % len(queries)]
        t0 = time.perf_counter()
        search(
            index,
            SearchRequest(q["query"], q["filters"], limit=limit),
            embedder=embedder,
            cursor_secret=secret,
        )
        latencies.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started
    return Row("engine", latencies, wall, cpu=time.process_time() - cpu_before)


# --- HTTP clients ---------------------------------------------------------------------------------


class McpClient:
    """One keep-alive connection that did the initialize handshake, like an agent's MCP client."""

    def __init__(self, url: str):
        self.url = url
        self.http = httpx.Client(timeout=60, headers=HEADERS)
        self.next_id = 0
        init = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "docsmcp-bench-http", "version": "1"},
        }
        reply = self._post({"jsonrpc": "2.0", "id": self._id(), "method": "initialize", "params": init})
        reply.raise_for_status()
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _post(self, body: dict) -> httpx.Response:
        return self.http.post(self.url, content=json.dumps(body))

    def search(self, arguments: dict) -> str | None:
        """None on success, else what went wrong."""
        body = {
            "jsonrpc": "2.0",
            "id": self._id(),
            "method": "tools/call",
            "params": {"name": "search_docs", "arguments": arguments},
        }
        try:
            response = self._post(body)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        if response.status_code != 200:
            return f"HTTP {response.status_code}: {response.text[:200]}"
        reply = response.json()
        if "error" in reply:
            return f"JSON-RPC {reply['error']}"
        result = reply["result"]
        if result.get("isError"):
            return f"isError: {result['content'][0]['text'][:200]}"
        if not isinstance((result.get("structuredContent") or {}).get("hits"), list):
            return "no hits list in structuredContent"
        return None

    def close(self) -> None:
        self.http.close()


def http_row(
    url: str, queries: list[dict], concurrency: int, requests: int, limit: int, samples: list[str],
    server: int | None = None,
) -> Row:
    """`requests` calls from `concurrency` clients; with `server` (the gunicorn master's pid), also
    the CPU its processes spent on them."""
    clients = [McpClient(url) for _ in range(concurrency)]
    counter = iter(range(requests))
    lock = threading.Lock()
    latencies: list[float] = []
    errors = 0
    bar = tqdm(total=requests, desc=f"http c={concurrency}", unit="req", leave=False)

    def drive(client: McpClient) -> None:
        nonlocal errors
        mine, failed = [], 0
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            q = queries[i % len(queries)]
            t0 = time.perf_counter()
            problem = client.search({"query": q["query"], "limit": limit, **q["filters"]})
            elapsed = time.perf_counter() - t0
            if problem is None:
                mine.append(elapsed)
            else:
                failed += 1
                if len(samples) < 5:
                    samples.append(problem)
            bar.update()
        with lock:
            latencies.extend(mine)
            errors += failed

    cpu_before = server_cpu(server)
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(drive, clients))
    wall = time.perf_counter() - started
    cpu_after = server_cpu(server)
    bar.close()
    for client in clients:
        client.close()
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return Row(f"http c={concurrency}", latencies, wall, errors, concurrency, cpu)


def warm_up(url: str, queries: list[dict], parallel: int, limit: int) -> int:
    """Every worker opens the index and answers the queries before anything is timed: rounds of
    the query list from `parallel` fresh connections until a round's p99 is within 3x its p50."""
    errors = 0
    for _ in range(10):
        row = http_row(url, queries, parallel, max(len(queries), parallel) * 2, limit, [])
        errors += row.errors
        if row.latencies and row.ms(99) < 3 * row.ms(50):
            break
    return errors


# --- main ------------------------------------------------------------------------------------------


def line(row: Row, engine: Row | None) -> str:
    text = (
        f"{row.label:<10} n={len(row.latencies):<6} p50={row.ms(50):7.2f}ms p95={row.ms(95):7.2f}ms "
        f"p99={row.ms(99):7.2f}ms {row.rate:8.1f} {'q/s' if engine is None else 'req/s'}"
    )
    if engine is not None:
        text += f"  errors={row.errors}  overhead_p50={row.ms(50) - engine.ms(50):+.2f}ms"
    if row.cpu is not None:
        text += f"  cpu={row.cpu_ms:.2f}ms/{'q' if engine is None else 'call'}"
    return text


def measure(args, url: str, index_path: Path, queries: list[dict],
            server: int | None = None) -> tuple[Row, list[Row], list[str]]:
    """Trials interleaved (engine, then each level; again), so a burst of load from other jobs
    spoils one trial of every row rather than every trial of one row."""
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    samples: list[str] = []
    engine_row(index_path, queries, min(len(queries), 50), args.limit)  # warm this process
    warm_errors = warm_up(url, queries, max([*levels, args.workers * args.threads]), args.limit)
    if warm_errors:
        print(f"warm-up: {warm_errors} error(s)", flush=True)
    engines: list[Row] = []
    trials: dict[int, list[Row]] = {c: [] for c in levels}
    for trial in range(args.trials):
        engines.append(engine_row(index_path, queries, args.requests, args.limit))
        for concurrency in levels:
            trials[concurrency].append(
                http_row(url, queries, concurrency, args.requests, args.limit, samples, server)
            )
        if args.trials > 1:
            summary = ", ".join(f"c={c} p50={rows[-1].ms(50):.2f}ms" for c, rows in trials.items())
            print(
                f"trial {trial + 1}/{args.trials}: engine p50={engines[-1].ms(50):.2f}ms, {summary}",
                flush=True,
            )
    rows = []
    for concurrency in levels:
        row = best(trials[concurrency])
        row.errors = sum(t.errors for t in trials[concurrency])  # every error counts, whichever trial won
        rows.append(row)
    return best(engines), rows, samples


def first_pass_line(row: Row) -> str:
    worst = max(row.latencies) * 1000 if row.latencies else float("nan")
    return (f"{row.label:<22} n={len(row.latencies):<5} p50={row.ms(50):7.2f}ms p99={row.ms(99):8.2f}ms "
            f"max={worst:8.2f}ms {row.rate:7.1f} req/s errors={row.errors}")


def first_pass(args, env: dict[str, str], url: str, queries: list[dict], name: str) -> list[Row]:
    """--first-pass: the pass a fresh server gets as soon as /health/ says 200, then a warmed pass,
    then a pass during which a new build of the corpus is activated (`manage.py build_index`,
    which for an unchanged corpus links the previous build's files and activates the copy)."""
    concurrency = 8 if "," in args.concurrency else int(args.concurrency)
    samples: list[str] = []
    rows = [http_row(url, queries, concurrency, args.requests, args.limit, samples)]
    rows[0].label = f"first pass c={concurrency}"
    warm_up(url, queries, max(concurrency, args.workers * args.threads), args.limit)
    rows.append(http_row(url, queries, concurrency, args.requests, args.limit, samples))
    rows[1].label = f"warmed pass c={concurrency}"

    def activate() -> None:
        time.sleep(0.5)
        subprocess.run([sys.executable, "manage.py", "build_index", "--corpus", name, "--no-progress"], cwd=ROOT,
                       env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL)

    activation = threading.Thread(target=activate)
    activation.start()
    rows.append(http_row(url, queries, concurrency, args.requests, args.limit, samples))
    rows[2].label = f"activation pass c={concurrency}"
    activation.join()
    for sample in samples[:5]:
        print(f"  e.g. {sample}")
    return rows


def hold(server: subprocess.Popen, url: str) -> None:
    """--serve-only: keep serving until Ctrl-C or SIGTERM, then stop the server."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    print(f"serving {url} (Ctrl-C or SIGTERM to stop)", flush=True)
    try:
        while server.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="markdown corpus directory")
    ap.add_argument("--name", help="corpus name (default: from the directory name)")
    ap.add_argument(
        "--provider", default="none", choices=["none", "hash", "local"], help="embedding provider"
    )
    ap.add_argument("--index-root", type=Path, help="index root to reuse (or build into); default a temp dir")
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help="JSONL (or JSON array) of queries")
    ap.add_argument("--workers", type=int, default=4, help="gunicorn worker processes (default 4)")
    ap.add_argument("--threads", type=int, default=4, help="threads per worker (default 4)")
    ap.add_argument("--port", type=int, help="server port (default: a free one)")
    ap.add_argument("--concurrency", default="1,8,32", help="comma-separated client counts (default 1,8,32)")
    ap.add_argument("--requests", type=int, default=1000, help="calls per concurrency level (default 1000)")
    ap.add_argument("--trials", type=int, default=1, help="measure each row N times, keep the best p50")
    ap.add_argument("--limit", type=int, default=10, help="hits per search (default 10)")
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    ap.add_argument("--first-pass", action="store_true",
                    help="fresh-server mode: time the first pass as soon as /health/ answers (no warm-up), then "
                         "a warmed pass, then a pass during which a new build is activated; --concurrency is "
                         "one client count (default 8), --requests the calls per pass")
    ap.add_argument(
        "--serve-only",
        action="store_true",
        help="set up and serve until stopped, for other clients (mcp_eval.py)",
    )
    args = ap.parse_args(argv)
    corpus = args.corpus.resolve()
    name = corpus_name(corpus, args.name)
    workdir = Path(tempfile.mkdtemp(prefix="docsmcp-bench-http-"))
    index_root = (args.index_root or workdir / "indexes").resolve()
    env = configure_django(workdir, index_root, name)
    index_path = prepare_index(corpus, name, args.provider, index_root)

    from corpus.serving import active_index

    index = active_index()
    queries = load_queries(args.queries, index.metadata.taxonomy)
    port = args.port or free_port()
    url = f"http://127.0.0.1:{port}/mcp/"
    print(
        f"corpus {name}: {len(index.catalog())} chunks, provider {args.provider}, {len(queries)} queries; "
        f"server {args.workers} workers x {args.threads} threads at {url}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    server = start_server(env, port, args.workers, args.threads, workdir / "server.log",
                          settle=not args.first_pass)
    try:
        if args.first_pass:
            rows = first_pass(args, env, url, queries, name)
            for row in rows:
                print(first_pass_line(row), flush=True)
            first, warmed = rows[0], rows[1]
            print(f"first pass p99 / warmed pass p99 = {first.ms(99) / warmed.ms(99):.2f}; "
                  f"activation pass p99 / warmed pass p99 = {rows[2].ms(99) / warmed.ms(99):.2f}; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(workdir, ignore_errors=True)
            return 1 if any(r.errors for r in rows) else 0
        if args.serve_only:
            hold(server, url)
            shutil.rmtree(workdir, ignore_errors=True)
            return 0
        engine, rows, samples = measure(args, url, index_path, queries, server.pid)
        memory = worker_memory(server.pid)
    finally:
        stop_server(server)
    print(line(engine, None))
    for row in rows:
        print(line(row, engine))
    errors = sum(r.errors for r in rows)
    if memory:
        print(f"worker memory, largest of {len(memory)}: RSS {max(m['rss'] for m in memory):.0f} MB "
              f"(peak {max(m['peak'] for m in memory):.0f} MB), PSS {max(m['pss'] for m in memory):.0f} MB", flush=True)
    print(f"errors: {errors}; load average at the end {os.getloadavg()[0]:.1f}", flush=True)
    for sample in samples[:5]:
        print(f"  e.g. {sample}")
    if args.json:
        payload = {
            "corpus": name,
            "chunks": len(index.catalog()),
            "provider": args.provider,
            "workers": args.workers,
            "threads": args.threads,
            "cpus": os.cpu_count(),
            "rows": [engine.as_dict(), *(r.as_dict() for r in rows)],
            "worker_memory_mb": memory,
        }
        args.json.write_text(json.dumps(payload, indent=2))
    if errors:
        print(f"kept {workdir} (server.log) for the errors above")
    else:
        shutil.rmtree(workdir, ignore_errors=True)  # the index too, unless it lives in --index-root
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
