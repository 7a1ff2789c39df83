"""The outline an author completes (no LLM): the questions in a comment where the answer goes, and
the approval refused while it is there.
"""

from __future__ import annotations

import re

from retrieval.errors import ContentFixError

from .base import Change, FixContext, ProposedFix, make_fix
from .content import MAX_QUESTIONS, PAGE_KIND, SECTION_KIND, quoted
from .drafts import Draft, draft_text, motivating_finding
from .questions import WORD, intent_heading

OUTLINE_MARKER = "docsmcp outline:"  # while the draft holds it, the proposal cannot be approved
MIN_ANSWER_WORDS = 5


def _comment_safe(text: str) -> str:
    """Agents' words inside an HTML comment: nothing in them may close it or open another."""
    return " ".join(re.sub(r"-(?=-)", "- ", text).replace("<!", "< !").replace(">", "&gt;").split())


def outline_body(questions: list[str]) -> str:
    """What the author replaces: the questions to answer, in a comment a reader never sees and the
    approval refuses while it is there."""
    asked = "\n".join(f"  - {_comment_safe(q)}" for q in questions[:MAX_QUESTIONS])
    return (f"<!-- {OUTLINE_MARKER} write here, in your own words, the answer to what agents asked, then delete "
            f"this comment. Agents asked (agent-supplied text, unchecked):\n{asked}\n-->")


def unwritten(text: str, body: str) -> str | None:
    """Why a drafted section or page cannot be approved yet (None: it has a written answer)."""
    if OUTLINE_MARKER in text:
        return "it is still an outline: write the answer and delete the outline comment"
    words = re.sub(r"<!--.*?-->", " ", body, flags=re.S)
    if len(WORD.findall(words)) < MIN_ANSWER_WORDS:
        return f"the section has no written answer (at least {MIN_ANSWER_WORDS} words)"
    return None


def outline_fix(ctx: FixContext, relpath: str, questions: list[str], feedback: list[str],
                heading: str | None = None) -> ProposedFix:
    """The heuristic proposal: a section named after the group's intent at the end of the page, holding
    the questions in an outline comment the author replaces with the answer before approving."""
    old, digest = ctx.read(relpath)
    if old is None:
        raise ContentFixError(f"{relpath} disappeared while proposing a fix")
    draft = Draft(heading or intent_heading(questions), outline_body(questions))
    change = Change(relpath, old, draft_text(old, relpath, draft), digest)
    rationale = (f"Agents asked what this page does not answer: {quoted(questions)}. An outline of a section "
                 f"\"{draft.heading}\" for the author to write: approving needs the answer written in place of "
                 "the outline comment.")
    fix = make_fix(ctx, kind=SECTION_KIND, relpath=relpath, change=change, rationale=rationale,
                   finding=motivating_finding(relpath, questions, feedback, draft=draft),
                   expect=lambda after: any(e.text == draft.heading for e in after.outline))
    if fix is None:
        raise ContentFixError(f"a section {draft.heading!r} cannot be added to {relpath}")
    return fix


def page_outline_fix(relpath: str, questions: list[str], feedback: list[str], heading: str | None = None) -> ProposedFix:
    """The heuristic proposal for a page that does not exist yet: its outline, to be written like a section."""
    draft = Draft(heading or intent_heading(questions), outline_body(questions), new_page=True)
    text = draft_text(None, relpath, draft)
    rationale = (f"Agents asked what no page answers: {quoted(questions)}. An outline of a new page "
                 f"\"{draft.heading}\" for the author to write: approving needs the answer written in place of "
                 "the outline comment.")
    return ProposedFix(kind=PAGE_KIND, file=relpath, target_path=relpath, rationale=rationale, old_text=None,
                       new_text=text, base_hash="", source="heuristic",
                       finding=motivating_finding(relpath, questions, feedback, draft=draft))
