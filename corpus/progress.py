"""A tqdm bar per build stage, for management commands."""

from __future__ import annotations

import sys

from tqdm import tqdm


class StageBars:
    def __init__(self, enabled: bool = True):
        self.enabled = enabled and sys.stderr.isatty() or enabled == "always"
        self.bar: tqdm | None = None
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = tqdm(total=total, desc=f"{stage:>8}", unit="item", file=sys.stderr, leave=True,
                            disable=not self.enabled, dynamic_ncols=True)
        if self.bar is not None:
            if total != self.bar.total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
