"""A drafted section or page, by the author or the model, turned into the page's new text; refused
when it would change a line the page already has.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.errors import ContentFixError
from retrieval.ingest.keywords import KEY
from retrieval.ingest.pages import FileResult, file_text
from retrieval.ingest.parsing import parse_markdown

from .content import MAX_HEADING_CHARS, MAX_SECTION_CHARS, quoted
from .edits import preserving_newlines
from .frontmatter_edits import frontmatter_extend


def motivating_finding(relpath: str, questions: list[str], feedback: list[str], *, draft: Draft | None = None,
             prompt: str | None = None) -> dict:
    """What motivated the proposal, in the shape of a validate finding (the admin shows it), with the
    questions and feedback themselves (agent-supplied: the review page marks them so), the draft the
    author edits, and for a model's proposal the exact message it was sent."""
    message = f"{len(questions)} question(s) agents asked did not find this page: {quoted(questions)}"
    if feedback:
        message += f" ({len(feedback)} feedback comment(s))"
    out = {"severity": "info", "code": "unanswered-questions", "file": relpath, "line": None,
           "message": message, "suggestion": "", "questions": questions, "feedback": feedback}
    if draft is not None:
        out["draft"] = draft.as_dict()
    if prompt is not None:
        out["prompt"] = prompt
    return out


def _keywords_added(after: FileResult, terms: list[str]) -> bool:
    if after.config is None or not after.chunks or any(f.code == "keywords-invalid" for f in after.findings):
        return False
    have = {t.casefold() for t in after.chunks[0].keywords.split(", ")}
    return all(t.casefold() in have for t in terms)


@dataclass(frozen=True)
class Draft:
    """A section added to a page, or a new page: what the author (or the model) writes and edits."""

    heading: str
    body: str
    after: str | None = None
    new_page: bool = False
    keywords: tuple[str, ...] = ()  # the model's keywords, added with its section

    def as_dict(self) -> dict:
        return {"heading": self.heading, "body": self.body, "after": self.after, "new_page": self.new_page,
                "keywords": list(self.keywords)}

    @classmethod
    def from_dict(cls, data: dict) -> Draft:
        return cls(str(data.get("heading") or ""), str(data.get("body") or ""), data.get("after") or None,
                   bool(data.get("new_page")), tuple(data.get("keywords") or ()))


def check_draft(heading: str, body: str) -> tuple[str, str]:
    """An author's or a model's heading and body, cleaned; ContentFixError says what is wrong."""
    if not isinstance(heading, str) or not heading.strip() or "\n" in heading.strip() \
            or len(heading.strip()) > MAX_HEADING_CHARS or heading.lstrip().startswith("#"):
        raise ContentFixError(f"the heading must be one line of plain text, at most {MAX_HEADING_CHARS} characters, "
                              "without # marks")
    if not isinstance(body, str) or not body.strip() or len(body) > MAX_SECTION_CHARS:
        raise ContentFixError(f"the text must be non-empty markdown of at most {MAX_SECTION_CHARS} characters")
    return " ".join(heading.split()), body.replace("\r\n", "\n").strip("\n")


def draft_text(old: str | None, relpath: str, draft: Draft) -> str:
    """The page's new text with the draft: a section inserted (every old line kept), or a new page."""
    if draft.new_page:
        page = f"# {draft.heading}\n\n{draft.body}\n"
        _check_body(draft.body, 1)
        return page
    new = _insert_section(old or "", relpath, Section(draft.heading, draft.body, draft.after))
    if not _is_addition(old or "", new, Section(draft.heading, draft.body, draft.after)):
        raise ContentFixError("the section would change the page's existing content, not only add to it")
    if draft.keywords:
        try:
            new = frontmatter_extend(new, KEY, list(draft.keywords))
        except ValueError as exc:
            raise ContentFixError(f"the keywords cannot be added: {exc}") from exc
    return new


@dataclass(frozen=True)
class Section:
    heading: str
    body: str
    after: str | None


def _check_body(body: str, level: int) -> None:
    body_doc = parse_markdown(body)
    if body_doc.frontmatter or body_doc.frontmatter_end:
        raise ContentFixError("the section's text must not start with front matter")
    closing = parse_markdown(f"{body}\n\n# end\n").blocks
    if not closing or closing[-1].kind != "heading" or closing[-1].text != "end":
        raise ContentFixError("the section's text leaves a code fence or another block open")
    if any(b.kind == "heading" and b.level <= level for b in body_doc.blocks):
        raise ContentFixError(f"the section's text has a heading of level {level} or above, which would split the "
                              "page differently; use deeper headings")


def _insert_section(text: str, relpath: str, section: Section) -> str:
    """The page with the section inserted after the `after` heading's section (default: at the
    end), at that heading's level (default: the page's section level), every old line kept."""
    doc = parse_markdown(file_text(text.encode("utf-8")))
    headings = [(n, b) for n, b in enumerate(doc.blocks) if b.kind == "heading"]
    levels = sorted({b.level for _n, b in headings if b.level > 1}) or [2]
    level, line = levels[0], len(doc.lines)
    if section.after:
        match = [(n, b) for n, b in headings if b.text.strip().casefold() == section.after.casefold()]
        if not match:
            raise ContentFixError(f"section after {section.after!r}: no such heading in {relpath}")
        index, block = match[0]
        level = max(block.level, 2)
        following = next((b for _n, b in headings if _n > index and b.level <= block.level), None)
        line = following.start if following is not None else len(doc.lines)
    _check_body(section.body, level)
    added = [f"{'#' * level} {section.heading}", "", *section.body.split("\n")]

    def edit(body: str) -> str:
        lines = body.split("\n")
        before, rest = lines[:line], lines[line:]
        while before and not before[-1].strip():
            before.pop()
        gap = [""] if before else []
        tail = ["", *rest] if any(r.strip() for r in rest) else [""]
        return "\n".join([*before, *gap, *added, *tail])

    return preserving_newlines(text, edit)


def _is_addition(old: str, new: str, section: Section) -> bool:
    """Every old block is still there, in order, and the only new blocks are the section's."""
    before, after = parse_markdown(file_text(old.encode())), parse_markdown(file_text(new.encode()))
    if after.frontmatter_error or after.frontmatter != before.frontmatter:
        return False

    def texts(doc) -> list[str]:
        return ["\n".join(doc.lines[b.start:b.end]).strip() for b in doc.blocks]

    old_blocks, new_blocks = texts(before), texts(after)
    section_blocks = len(parse_markdown(section.body).blocks) + 1
    if len(new_blocks) != len(old_blocks) + section_blocks:
        return False
    for start in range(len(old_blocks) + 1):
        if new_blocks[:start] + new_blocks[start + section_blocks:] == old_blocks:
            return True
    return False


def draft_takes_effect(after: FileResult, draft: Draft) -> bool:
    if after.config is None or any(f.code == "keywords-invalid" for f in after.findings):
        return False
    if draft.keywords and not _keywords_added(after, list(draft.keywords)):
        return False
    return any(e.text == draft.heading for e in after.outline)
