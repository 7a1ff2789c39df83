"""Content fixes: a change to ONE page so that the questions agents could not answer find it.

Words added to a page that does not answer a question only make agents confidently wrong (the page
ranks first, the search says "covered", and nothing is answered), so no fixer adds terms alone. Two
drafts, both ending in an ordinary proposal (reviewed as a diff with the chunks before and after,
applied only while the page is unchanged) whose text the author writes or edits before approving:

- the outline (heuristic, no LLM, `outline`): a section named after the group's intent
  (`questions.intent_heading`) at the end of the page, or a new page, holding the questions in an
  outline comment; it cannot be approved until the author has written the answer in its place
  (`unwritten`).
- `content-section` by the LLM (`llm_content`): the model reads the page and, fenced as untrusted
  data, the questions and the readers' feedback, and drafts a section answering them (keywords only
  beside it). The answer is validated strictly (`drafts`): the section is inserted, never rewriting a
  line of the page; the page must still parse, with its old headings and blocks intact.

This module holds what both share: the kinds, the limits, the page a fix reads. Plain Python:
`corpus.content_fixes.content_fix_propose` stores the proposal.
"""

from __future__ import annotations

from pathlib import Path

from retrieval.errors import ContentFixError
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.pages import process_file

from .base import FixContext

KEYWORDS_KIND, SECTION_KIND, PAGE_KIND = "content-keywords", "content-section", "content-page"
DRAFT_KINDS = (SECTION_KIND, PAGE_KIND)  # proposals whose text the author writes or edits before approving

MAX_QUESTIONS = 50
MAX_QUESTION_CHARS = 500
MAX_FEEDBACK = 20
MAX_FEEDBACK_CHARS = 2_000
MAX_PAGE_CHARS = 12_000  # of the page's text sent to the model
MAX_SECTION_CHARS = 6_000
MAX_HEADING_CHARS = 120


def page_context(root: Path, relpath: str) -> FixContext:
    """The corpus's manifests and one processed page: all a content fix reads (the other pages are
    never chunked, so proposing stays cheap on a large corpus)."""
    scan = scan_corpus(root)
    if relpath not in scan.files:
        raise ContentFixError(f"{relpath!r} is not a markdown page of this corpus")
    result = process_file(relpath, scan.files[relpath], scan.file_key(relpath), scan.manifests,
                          scan.taxonomy_config())
    if result.config is None:
        raise ContentFixError(f"{relpath} cannot be read: {result.findings[0].message if result.findings else ''}")
    return FixContext(scan.root, scan, {relpath: result}, list(result.findings))


def quoted(questions: list[str], limit: int = 5) -> str:
    shown = "; ".join(f'"{q[:160]}"' for q in questions[:limit])
    return shown + (f"; and {len(questions) - limit} more" if len(questions) > limit else "")
