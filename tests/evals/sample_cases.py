"""A few of the bundled sample suite's cases, two of each category, for tests of what is done with a run (the
REST API, the admin, the commands, the task) rather than of the sample corpus's scores: those stay on all 90
cases (tests/evals/test_evals.py::test_in_process_run_on_the_sample_corpus), and each case costs a search
and a read."""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE_SUITE = Path(__file__).resolve().parents[2] / "corpus" / "sample_docs_eval.json"


def two_of_each_category(directory: Path) -> Path:
    """The sample suite's first two cases of each category, as a suite file in `directory`."""
    taken: dict[str, int] = {}
    cases = []
    for case in json.loads(SAMPLE_SUITE.read_text()):
        if taken.get(case["category"], 0) < 2:
            taken[case["category"]] = taken.get(case["category"], 0) + 1
            cases.append(case)
    path = directory / "sample-cases.json"
    path.write_text(json.dumps(cases))
    return path
