"""A Celery worker whose builds stall once their tables are written, so a test can kill it there.

Test-only: `python -m tests.stalling_worker -A common worker ...`. The marker file named by
DOCSMCP_TEST_STALL_MARKER appears when a build reaches the stall, i.e. its `.partial` directory
holds written tables; the build then waits for the test's SIGKILL.
"""

import os
import sys
import time
from pathlib import Path

import retrieval.ingest.build


def _stall(*args, **kwargs) -> None:
    Path(os.environ["DOCSMCP_TEST_STALL_MARKER"]).touch()
    while True:
        time.sleep(1)


retrieval.ingest.build.create_indexes = _stall

if __name__ == "__main__":
    from celery.__main__ import main

    sys.exit(main())
