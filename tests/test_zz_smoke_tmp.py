import json
from pathlib import Path
from evals.services import suite_import, eval_run

def test_smoke(sample_corpus):
    suite = suite_import(name="sample", path=Path("corpus/sample_docs_eval.json"), corpus=sample_corpus)
    run = eval_run(corpus=sample_corpus, suite=suite)
    print(run.status, run.error)
    print(json.dumps(run.metrics["overall"], indent=1))
    print(run.latency)
    for r in run.results.filter(passed=False):
        print(r.case_name, r.category, r.chunk_rank, r.top_hits[:3], r.error)
