"""Writes docs/settings.md from the settings registry (docsmcp_site/settings/registry.py) and the system
checks (docsmcp_site/checks.py): `.venv/bin/python scripts/settings_docs.py`. With --check it writes
nothing and exits 1 when the committed page is not what they give (tests/docsmcp_site/test_settings_documented.py
runs the same comparison).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "settings.md"


def page() -> str:
    from docsmcp_site.checks import documented
    from docsmcp_site.settings.registry import render_markdown

    return render_markdown(documented())


def main(argv: list[str], path: Path = PAGE) -> int:
    current = path.read_text() if path.exists() else ""
    if "--check" in argv:
        if current != page():
            print(f"{path} is not what the registry gives; run `.venv/bin/python scripts/settings_docs.py`",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(page())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    sys.exit(main(sys.argv[1:]))
