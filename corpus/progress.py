"""A tqdm bar per build stage, for management commands; on a stream that is not a terminal (a log, a
pipe, `docsmcp serve PATH` under a process manager), a plain line now and then instead, so a build of
thousands of pages never runs for minutes in silence. tqdm is loaded only when a bar is drawn: a
one-page rebuild spends a tenth of a second less starting."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm

# Without a terminal: a stage that ends within PLAIN_AFTER seconds prints nothing; a longer one prints
# its count once PLAIN_AFTER has passed, then at most every PLAIN_EVERY seconds, and once when it ends.
PLAIN_AFTER = 2.0
PLAIN_EVERY = 10.0


class StageBars:
    def __init__(self, enabled: bool | str = True):
        tty = sys.stderr.isatty()
        self.enabled = enabled and tty or enabled == "always"
        self.plain = bool(enabled) and not self.enabled
        self.bar: tqdm | None = None
        self.stage = ""
        self.started = 0.0
        self.printed: float | None = None
        self.count = (0, 0)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.plain:
            self._line(stage, done, total)
            return
        if not self.enabled:
            return
        if stage != self.stage:
            self.close()
            self.stage = stage
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=f"{stage:>8}", unit="item", file=sys.stderr, leave=True,
                            dynamic_ncols=True)
        if self.bar is not None:
            if total != self.bar.total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def _line(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage != self.stage:
            self.close()
            self.stage, self.started, self.printed = stage, now, None
        self.count = (done, total)
        if now - self.started >= PLAIN_AFTER and (self.printed is None or now - self.printed >= PLAIN_EVERY):
            print(f"{stage:>8}: {done}/{total} ({now - self.started:.0f} s)", file=sys.stderr, flush=True)
            self.printed = now

    def close(self) -> None:
        if self.plain:
            if self.printed is not None:
                done, total = self.count
                print(f"{self.stage:>8}: {done}/{total} done in {time.monotonic() - self.started:.0f} s",
                      file=sys.stderr, flush=True)
            self.printed = None
            return
        if self.bar is not None:
            self.bar.close()
            self.bar = None
