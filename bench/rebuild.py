#!/usr/bin/env python
"""One changed page rebuilt and active: `manage.py build_index` wall time, process start included.

    python bench/rebuild.py --corpus /path/to/docs [--checkout DIR ...] [--rounds 5] [--provider none]

For each checkout (default: this one; give several to compare commits, e.g. a `git worktree` of the
base commit beside this one), a fresh DOCSMCP_HOME with its own SQLite database, a copy of the corpus
and a full build (`build_index --corpus bench --source COPY --full`). Then `--rounds` rounds, the
checkouts alternating within each round so a loaded machine weighs on all of them alike: one paragraph
appended to one page (a different page each round, the same pages for every checkout), and
`manage.py build_index --corpus bench --no-progress` timed from the process's start to its exit, the
build active when it exits. Prints one line per build and each checkout's median; the full builds'
times too, so a change that slows them shows.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _manage(checkout: Path, home: Path, *args: str) -> tuple[float, float]:
    """Runs `manage.py` of `checkout` with its own data directory; the wall seconds it took and its CPU
    seconds (user + system, its children's too), which a loaded machine inflates less than the wall time."""
    env = {**os.environ, "DOCSMCP_HOME": str(home), "DOCSMCP_SOURCE_ROOTS": str(home)}
    env.pop("DATABASE_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installation runs from compiled modules
    python = checkout / ".venv" / "bin" / "python"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([str(python if python.exists() else sys.executable), str(checkout / "manage.py"), *args],
                          env=env, cwd=checkout, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{checkout}: manage.py {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(ROOT / "corpus" / "sample_docs"))
    parser.add_argument("--checkout", action="append", help="a source tree with manage.py (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--provider", default="none", help="embedding provider of the builds")
    args = parser.parse_args()
    checkouts = [Path(c).resolve() for c in args.checkout or [str(ROOT)]]
    work = Path(tempfile.mkdtemp(prefix="docsmcp-bench-rebuild-"))
    try:
        homes = {}
        for n, checkout in enumerate(checkouts):
            home = homes[checkout] = work / f"home-{n}"
            home.mkdir()
            print(f"{checkout}: copying {args.corpus} and building it whole ...", file=sys.stderr, flush=True)
            shutil.copytree(args.corpus, home / "corpus")
            _manage(checkout, home, "migrate", "--noinput", "-v0")
            seconds, cpu = _manage(checkout, home, "build_index", "--corpus", "bench", "--source", str(home / "corpus"),
                                   "--full", "--no-progress", "--embedding-provider", args.provider)
            print(f"{checkout}\tfull\tseconds={seconds:.2f}\tcpu={cpu:.2f}", flush=True)
        pages = sorted(p.relative_to(home / "corpus") for p in (home / "corpus").rglob("*.md"))
        times: dict[Path, list[float]] = {c: [] for c in checkouts}
        cpus: dict[Path, list[float]] = {c: [] for c in checkouts}
        for n in range(args.rounds):
            page = pages[(n * 7919) % len(pages)]
            for checkout in checkouts:
                target = homes[checkout] / "corpus" / page
                target.write_text(target.read_text() + f"\n\nBenchmark round {n}: one changed paragraph.\n")
                seconds, cpu = _manage(checkout, homes[checkout], "build_index", "--corpus", "bench", "--no-progress")
                times[checkout].append(seconds)
                cpus[checkout].append(cpu)
                print(f"{checkout}\tround={n}\tpage={page}\tseconds={seconds:.2f}\tcpu={cpu:.2f}", flush=True)
        for checkout, found in times.items():
            print(f"{checkout}\tone changed page, median of {len(found)}: {statistics.median(found):.2f} s wall "
                  f"(min {min(found):.2f}, max {max(found):.2f}), {statistics.median(cpus[checkout]):.2f} s CPU",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
