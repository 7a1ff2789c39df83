"""How long `docsmcp --help` and `docsmcp --version` take, and what they import, in a checkout.

    python bench/cli_start.py [--root CHECKOUT] [--runs N] [--args "--help" "--version" "build_index --help" ...]

Each command runs `python -m docsmcp_site ARGS` from CHECKOUT (default: this one) N times (default 10),
alternating between the commands (and `python -c pass`, the interpreter's own start-up, the floor on a
loaded machine; an entry of several words is one command's arguments), and prints the median and the
fastest wall time of each, and the
modules it imported that start-up should not need (Django, ninja, OAuth, LanceDB, Arrow, NumPy),
from one more run under `python -X importtime`. Run it against two checkouts one after the other,
alternating, to compare.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("django", "ninja", "pydantic", "oauth2_provider", "jwcrypto", "cryptography", "lancedb", "pyarrow", "numpy")


FLOOR = "python -c pass"  # the interpreter's own start-up, the floor under any command


def timed(root: Path, args: list[str]) -> float:
    command = ([sys.executable, "-c", "pass"] if args == [FLOOR]
               else [sys.executable, "-m", "docsmcp_site", *(word for arg in args for word in arg.split())])
    started = time.perf_counter()
    subprocess.run(command, cwd=root, check=True, capture_output=True)
    return time.perf_counter() - started


def heavy_imports(root: Path, args: list[str]) -> tuple[list[str], float]:
    """The HEAVY packages the command imports, and the seconds its imports took (their own times summed)."""
    words = [word for arg in args for word in arg.split()]
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "docsmcp_site", *words], cwd=root,
                          capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in done.stderr.splitlines()
            if line.startswith("import time:") and "self [us]" not in line]
    names = {row[-1].strip() for row in rows}
    seconds = sum(int(row[0].split(":")[1]) for row in rows) / 1e6
    return sorted({name.split(".")[0] for name in names if name.split(".")[0] in HEAVY}), seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--args", nargs="+", default=["--help", "--version"])
    options = ap.parse_args(argv)
    root = options.root.resolve()
    options.args = [FLOOR, *options.args]
    times: dict[str, list[float]] = {a: [] for a in options.args}
    for arg in options.args:  # one warm-up each: the first run reads the files from disk
        timed(root, [arg])
    for _ in range(options.runs):
        for arg in options.args:
            times[arg].append(timed(root, [arg]))
    print(f"checkout {root}, {options.runs} runs each")
    for arg, values in times.items():
        if arg == FLOOR:
            print(f"{FLOOR:18} median {statistics.median(values):.3f} s, fastest {min(values):.3f} s")
            continue
        heavy, seconds = heavy_imports(root, [arg])
        print(f"docsmcp {arg:10} median {statistics.median(values):.3f} s, fastest {min(values):.3f} s; "
              f"imports {', '.join(heavy) or 'none of ' + '/'.join(HEAVY)} ({seconds:.2f} s of imports)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
