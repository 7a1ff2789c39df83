#!/usr/bin/env python
"""What reading the sources costs a one-page rebuild, in proportion to the corpus: a git tree read after a
one-page push, the scan of a tree (exclude rules, Hugo leaf bundles), in this checkout.

    python bench/scan_cost.py [--corpus DIR] [--copies 15] [--bundles 5000] [--rounds 6]

1. The corpus (default ../shared/bench/k8s/corpus) copied into a git repository in a temporary directory
   and read once (`retrieval.ingest.git.read_tree`, as a build of a git source does), then `--rounds`
   times: one line appended to one page, committed, fetched and the tree read again; each read timed.
2. `scan_tree` of that tree, and of `--copies` copies of it side by side (`v0/...`, `v1/...`): the
   fastest of 5 runs.
3. `scan_tree` of a Hugo site of `--bundles` leaf bundles (`posts/pN/index.md`, every tenth with a
   resource page): a site whose pages are all bundles.

Run it from each checkout to compare (`cd CHECKOUT && python bench/scan_cost.py`); no database, no Django.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))

from retrieval.ingest import git  # noqa: E402
from retrieval.ingest.tree import scan_tree  # noqa: E402

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@localhost"}


def run_git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def fastest(files: dict[str, bytes], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        scan_tree(Path("bench"), files)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared"
                        / "bench" / "k8s" / "corpus")
    parser.add_argument("--copies", type=int, default=15)
    parser.add_argument("--bundles", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsmcp-bench-scan-"))
    try:
        repo = work / "repo"
        shutil.copytree(args.corpus, repo)
        run_git(repo, "init", "--quiet", "--initial-branch=main")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "--quiet", "-m", "docs")
        source, cache = git.GitSource(repo.as_uri(), "main"), work / "cache"
        tree = git.read_tree(source, cache, git.fetch(source, cache))
        page = max((p for p in repo.rglob("*.md") if ".git" not in p.parts), key=lambda p: p.stat().st_size)
        reads = []
        for n in range(args.rounds):
            page.write_text(page.read_text() + f"\nLine {n} of this push.\n")
            run_git(repo, "commit", "--quiet", "-am", f"push {n}")
            commit = git.fetch(source, cache)
            started = time.perf_counter()
            git.read_tree(source, cache, commit)
            reads.append(time.perf_counter() - started)
        print(f"{ROOT}: {len(tree.files)} files, tree read after a one-page push: "
              f"{' '.join(f'{s * 1000:.0f}' for s in reads)} ms")
        print(f"scan_tree, {len(tree.files)} files: {fastest(tree.files) * 1000:.1f} ms")
        copies = {f"v{n}/{path}": data for n in range(args.copies) for path, data in tree.files.items()}
        print(f"scan_tree, {args.copies} copies ({len(copies)} files): {fastest(copies) * 1000:.1f} ms")
        site = {"_index.md": b"# Site\n", **{f"posts/p{n}/index.md": b"# Post\n" for n in range(args.bundles)},
                **{f"posts/p{n}/notes.md": b"# Notes\n" for n in range(0, args.bundles, 10)}}
        print(f"scan_tree, Hugo site of {args.bundles} leaf bundles ({len(site)} files): "
              f"{fastest(site, runs=1) * 1000:.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
