"""Command start-up: wall time from process start to exit of `manage.py help` and of `manage.py
build_index` on an unchanged corpus, and from spawning `manage.py mcp_stdio` to its first
`tools/list` answer; with the CPU time of each (user + system, the command and its children).

    DATABASE_URL=... DOCSMCP_INDEX_ROOT=... python bench/startup.py --corpus NAME [--runs 5]

The corpus must be registered and built once already (`manage.py build_index --corpus NAME
--source DIR`), so each timed `build_index` finds nothing changed. Prints every run and the
median of each figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.stdio_startup import run_once  # noqa: E402


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds of the command, and the CPU seconds it and its children used."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a registered corpus with an active build")
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    figures: dict[str, list[tuple[float, float]]] = {"help": [], "build_index (unchanged)": [],
                                                     "stdio first tools/list": []}
    for n in range(options.runs):
        figures["help"].append(timed(["help"]))
        figures["build_index (unchanged)"].append(
            timed(["build_index", "--corpus", options.corpus, "--no-progress"]))
        before = os.times()
        listed, _ = run_once(options.corpus, "how do I configure it")
        after = os.times()
        figures["stdio first tools/list"].append(
            (listed, (after.children_user - before.children_user) + (after.children_system - before.children_system)))
        print(f"run {n + 1}: " + ", ".join(f"{name} {runs[-1][0] * 1000:.0f} ms" for name, runs in figures.items()),
              flush=True)
    print(f"median of {options.runs} (load average {os.getloadavg()[0]:.1f}):")
    for name, runs in figures.items():
        print(f"  {name:<24} wall {statistics.median(r[0] for r in runs) * 1000:6.0f} ms   "
              f"CPU {statistics.median(r[1] for r in runs) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
