"""Content fixes: a change to ONE page so that the questions agents could not answer find it.

Two fixers, both ending in an ordinary proposal (reviewed as a diff with the chunks before and
after, applied only while the page is unchanged):

- `content-keywords` (heuristic, no LLM): the questions' words and identifiers that the page does
  not contain, stop words left out, at most `MAX_TERMS`, added to the page's front matter
  `keywords`, which rank every chunk of the page (retrieval/ingest/keywords.py).
- `content-section` (LLM): the model reads the page, the questions and the readers' feedback and
  drafts a new section answering them, and/or keywords. The answer is validated strictly: the
  section is inserted, never rewriting a line of the page; the page must still parse, with its
  old headings and blocks intact; keywords obey the same rules as hand-written ones.

Plain Python: `corpus.fixes.content_fix_propose` stores the proposal.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from retrieval.errors import ConfigError, RetrievalError
from retrieval.ingest.keywords import KEY, MAX_KEYWORD_CHARS, MAX_KEYWORDS, page_keywords
from retrieval.ingest.parsing import parse_markdown
from retrieval.ingest.sources import FileResult, file_text, process_file, scan_corpus
from retrieval.ingest.terms import identifier_terms

from .base import Change, FixContext, ProposedFix, make_fix
from .edits import frontmatter_extend, preserving_newlines
from .llm import LLMFixer, LLMFixError, answer_rationale

log = logging.getLogger("retrieval.fixes")

KEYWORDS_KIND, SECTION_KIND = "content-keywords", "content-section"
MAX_TERMS = 6  # a handful: each keyword is on every chunk of the page
MAX_QUESTIONS = 50
MAX_QUESTION_CHARS = 500
MAX_FEEDBACK = 20
MAX_FEEDBACK_CHARS = 2_000
MAX_PAGE_CHARS = 12_000  # of the page's text sent to the model
MAX_SECTION_CHARS = 6_000
MAX_HEADING_CHARS = 120
ANSWER_KEYS = {"section", "keywords", "rationale"}
SECTION_KEYS = {"heading", "body", "after"}

_STOP_TEXT = """
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each else ever every
few for from further get gets getting got had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just let like make makes me might more most much must my myself need
needs no nor not now of off on once one only or other ought our ours ourselves out over own per please possible
same shall she should shouldn so some such than that the their theirs them themselves then there these they this
those through to too under until up upon us use used uses using via want wants was wasn way ways we were weren
what when where whether which while who whom whose why will with within without won would wouldn yes yet you
your yours yourself yourselves anyone anything someone something thing things doc docs documentation page pages
example examples know tell show find work works working
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())  # English function words and the words of any question about docs
_TOKEN = re.compile(r"[A-Za-z0-9_$@][\w$@]*(?:(?:\.|::|->|-)[A-Za-z0-9_$@][\w$@]*)*")
_WORD = re.compile(r"\w+")
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""))


class ContentFixError(RetrievalError):
    """No content fix can be made for this page and these questions; the message says why."""


# --- what the page is missing ------------------------------------------------------------------------


def clean_texts(texts: list[str], *, limit: int, max_chars: int) -> list[str]:
    """Questions or feedback comments: whitespace collapsed, empty ones and repeats dropped, bounded."""
    out: dict[str, str] = {}
    for text in texts:
        cleaned = " ".join(str(text).split())[:max_chars]
        if cleaned:
            out.setdefault(cleaned.casefold(), cleaned)
    return list(out.values())[:limit]


def _variants(word: str) -> set[str]:
    """The word and its forms without a plural or verb ending: `retries` also counts as `retry`."""
    out = {word}
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.add(word[: -len(suffix)] + replacement)
    return out


def _page_forms(text: str) -> tuple[set[str], str]:
    lowered = text.casefold()
    forms: set[str] = set()
    for word in _WORD.findall(lowered):
        forms |= _variants(word)
    return forms, lowered


def _question_terms(question: str) -> list[str]:
    """Identifiers whole (`max_connections`, `kubectl-apply`), other words one by one."""
    identifiers = set(identifier_terms(question))
    out: list[str] = []
    for token in _TOKEN.findall(question):
        token = token.strip(".-")
        if token.casefold() in identifiers:
            out.append(token)
        else:
            out.extend(_WORD.findall(token))
    return out


def _is_candidate(term: str) -> bool:
    folded = term.casefold()
    if folded in STOP_WORDS or len(term) > MAX_KEYWORD_CHARS:
        return False
    if folded.isdigit():
        return len(folded) >= 3  # a status code or a port, not a list number
    return len(folded) >= 3 and not folded.replace("_", "").isdigit()


def _present(term: str, forms: set[str], lowered: str) -> bool:
    folded = term.casefold()
    if not _WORD.fullmatch(folded):  # an identifier: present when the page spells it out
        return re.search(rf"(?<![\w.-]){re.escape(folded)}(?![\w-])", lowered) is not None
    return bool(_variants(folded) & forms)


def missing_terms(questions: list[str], page_text: str, *, limit: int = MAX_TERMS) -> list[str]:
    """The questions' terms the page (front matter included) does not contain, most asked first,
    then in the order they were asked: the same questions and page always give the same terms."""
    forms, lowered = _page_forms(page_text)
    counts: dict[str, int] = {}
    spelled: dict[str, str] = {}
    for question in questions:
        seen: set[str] = set()
        for term in _question_terms(question):
            folded = term.casefold()
            if folded in seen or not _is_candidate(term) or _present(term, forms, lowered):
                continue
            seen.add(folded)
            spelled.setdefault(folded, term)
            counts[folded] = counts.get(folded, 0) + 1
    order = {folded: n for n, folded in enumerate(spelled)}
    ranked = sorted(spelled, key=lambda f: (-counts[f], order[f]))
    return [spelled[f] for f in ranked[:limit]]


# --- one page ----------------------------------------------------------------------------------------


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


def _existing_keywords(ctx: FixContext, relpath: str) -> tuple[str, ...]:
    doc = ctx.doc(relpath)
    found = page_keywords(doc.frontmatter, doc.lines, doc.frontmatter_end)
    value = doc.frontmatter.get(KEY)
    if value is not None and not isinstance(value, list | str):
        raise ContentFixError(f"{relpath}: front matter keywords is not a list, so it cannot be extended; "
                              f"fix it by hand first (validate reports it as keywords-invalid)")
    return found.terms


def _quoted(questions: list[str], limit: int = 5) -> str:
    shown = "; ".join(f'"{q[:160]}"' for q in questions[:limit])
    return shown + (f"; and {len(questions) - limit} more" if len(questions) > limit else "")


def _finding(relpath: str, questions: list[str], feedback: list[str]) -> dict:
    """What motivated the proposal, in the shape of a validate finding (the admin shows it), with
    the questions and feedback themselves."""
    message = f"{len(questions)} question(s) agents asked did not find this page: {_quoted(questions)}"
    if feedback:
        message += f" ({len(feedback)} feedback comment(s))"
    return {"severity": "info", "code": "unanswered-questions", "file": relpath, "line": None,
            "message": message, "suggestion": "", "questions": questions, "feedback": feedback}


def _keywords_added(after: FileResult, terms: list[str]) -> bool:
    if after.config is None or not after.chunks or any(f.code == "keywords-invalid" for f in after.findings):
        return False
    have = {t.casefold() for t in after.chunks[0].keywords.split(", ")}
    return all(t.casefold() in have for t in terms)


def keywords_change(ctx: FixContext, relpath: str, terms: list[str]) -> Change:
    old, digest = ctx.read(relpath)
    if old is None:
        raise ContentFixError(f"{relpath} disappeared while proposing a fix")
    try:
        return Change(relpath, old, frontmatter_extend(old, KEY, terms), digest)
    except ValueError as exc:
        raise ContentFixError(f"{relpath}: the front matter keywords cannot be extended: {exc}") from exc


def keywords_fix(ctx: FixContext, relpath: str, questions: list[str], feedback: list[str]) -> ProposedFix:
    """The heuristic proposal; ContentFixError when the page already has every term or no room."""
    existing = _existing_keywords(ctx, relpath)
    room = MAX_KEYWORDS - len(existing)
    if room <= 0:
        raise ContentFixError(f"{relpath} already has {len(existing)} keywords, the most that count; "
                              "edit them by hand or ask the LLM fixer for a new section")
    old, _digest = ctx.read(relpath)
    terms = missing_terms(questions, old or "", limit=min(MAX_TERMS, room))
    if not terms:
        raise ContentFixError(f"{relpath} already contains every word of these questions; the page may need a "
                              "section that answers them (ask the LLM fixer) or the questions belong to another page")
    change = keywords_change(ctx, relpath, terms)
    rationale = (f"Agents' questions did not find this page, in words it does not use: {_quoted(questions)}. "
                 f"Adds {', '.join(terms)} to its front matter keywords, which every chunk of the page is "
                 "searched by (docs/search.md).")
    fix = make_fix(ctx, kind=KEYWORDS_KIND, relpath=relpath, change=change, rationale=rationale,
                   finding=_finding(relpath, questions, feedback), expect=lambda after: _keywords_added(after, terms))
    if fix is None:
        raise ContentFixError(f"adding keywords {', '.join(terms)} to {relpath} would not take effect")
    return fix


# --- the LLM -----------------------------------------------------------------------------------------

CONTENT_PROMPT = f"""You improve ONE markdown documentation page that a search engine serves to AI agents. \
Agents asked questions that did not find this page, or found it and reported the answer as unhelpful, \
wrong, outdated or missing. You get the page (its outline, its front matter keywords and its text, perhaps \
cut short), the questions, the readers' feedback, and the question words the page does not contain.

Propose an ADDITION to the page, never a rewrite: either a new section that answers the questions from what \
the page and your knowledge of the subject reliably support, or keywords (search terms and aliases readers \
use for what the page covers), or both. Keep a section short and factual, in the page's style; do not \
invent options, commands or values the page does not support; leave it out when you cannot answer \
reliably and give keywords only.

Answer with ONE JSON object and nothing else:
{{"section": optional {{"heading": "plain heading text, no # marks", "body": "markdown without a top-level \
heading and without front matter", "after": optional "text of the existing heading whose section it \
follows (default: the end of the page)"}},
 "keywords": optional list of at most {MAX_KEYWORDS} short strings (each at most {MAX_KEYWORD_CHARS} characters),
 "rationale": "one to three sentences for the human who reviews the change"}}
Give at least one of "section" and "keywords". No other keys."""


@dataclass(frozen=True)
class Section:
    heading: str
    body: str
    after: str | None


@dataclass(frozen=True)
class ContentAnswer:
    section: Section | None
    keywords: tuple[str, ...]
    rationale: str


def content_request(ctx: FixContext, relpath: str, questions: list[str], feedback: list[str]) -> dict:
    """What the model sees: this page (text cut at MAX_PAGE_CHARS), its questions and feedback."""
    result = ctx.results[relpath]
    text = result.content
    return {
        "file": relpath,
        "title": result.title,
        "outline": [{"level": e.level, "text": e.text[:120]} for e in result.outline[:150]],
        "keywords": list(_existing_keywords(ctx, relpath)),
        "text": text[:MAX_PAGE_CHARS],
        "text_cut": len(text) > MAX_PAGE_CHARS,
        "questions": questions,
        "feedback": feedback,
        "missing_words": missing_terms(questions, text, limit=20),
    }


def validate_content_answer(data: object) -> ContentAnswer:
    """Strict: unknown keys, an empty answer, a section that is not a plain addition are errors."""
    rationale = answer_rationale(data, ANSWER_KEYS)
    keywords = data.get("keywords") or []
    if not isinstance(keywords, list) or not all(isinstance(k, str) and k.strip() for k in keywords):
        raise LLMFixError("keywords must be a list of non-empty strings")
    if len(keywords) > MAX_KEYWORDS or any(len(k.strip()) > MAX_KEYWORD_CHARS or "," in k for k in keywords):
        raise LLMFixError(f"keywords: at most {MAX_KEYWORDS}, each at most {MAX_KEYWORD_CHARS} characters "
                          "without commas")
    section = None
    if data.get("section") is not None:
        raw = data["section"]
        if not isinstance(raw, dict) or set(raw) - SECTION_KEYS:
            raise LLMFixError(f"section must be an object with {', '.join(sorted(SECTION_KEYS))}")
        heading, body, after = raw.get("heading"), raw.get("body"), raw.get("after")
        if not isinstance(heading, str) or not heading.strip() or "\n" in heading.strip() \
                or len(heading) > MAX_HEADING_CHARS or heading.lstrip().startswith("#"):
            raise LLMFixError(f"section heading must be one line of plain text, at most {MAX_HEADING_CHARS} "
                              "characters, without # marks")
        if not isinstance(body, str) or not body.strip() or len(body) > MAX_SECTION_CHARS:
            raise LLMFixError(f"section body must be non-empty markdown of at most {MAX_SECTION_CHARS} characters")
        if after is not None and not isinstance(after, str):
            raise LLMFixError("section after must be the text of an existing heading")
        section = Section(" ".join(heading.split()), body.strip("\n"), after.strip() if after else None)
    if section is None and not keywords:
        raise LLMFixError("answer proposes neither a section nor keywords")
    terms = tuple(dict.fromkeys(" ".join(k.split()) for k in keywords))
    return ContentAnswer(section, terms, " ".join(rationale.split()))


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
            raise LLMFixError(f"section after {section.after!r}: no such heading in {relpath}")
        index, block = match[0]
        level = max(block.level, 2)
        following = next((b for _n, b in headings if _n > index and b.level <= block.level), None)
        line = following.start if following is not None else len(doc.lines)
    body_doc = parse_markdown(section.body)
    if body_doc.frontmatter or body_doc.frontmatter_end:
        raise LLMFixError("section body must not start with front matter")
    closing = parse_markdown(f"{section.body}\n\n# end\n").blocks
    if not closing or closing[-1].kind != "heading" or closing[-1].text != "end":
        raise LLMFixError("section body leaves a code fence or another block open")
    if any(b.kind == "heading" and b.level <= level for b in body_doc.blocks):
        raise LLMFixError(f"section body has a heading of level {level} or above, which would split the page "
                          "differently; use deeper headings")
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


def llm_content_fix(fixer: LLMFixer, ctx: FixContext, relpath: str, questions: list[str],
                    feedback: list[str]) -> ProposedFix:
    """The model's draft as a proposal; LLMFixError (logged) when the request fails or the draft is
    not a valid addition."""
    try:
        raw = fixer.complete(content_request(ctx, relpath, questions, feedback), system=CONTENT_PROMPT)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LLMFixError(f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
        answer = validate_content_answer(data)
        old, digest = ctx.read(relpath)
        if old is None:
            raise LLMFixError(f"{relpath} disappeared while proposing a fix")
        new = old
        if answer.section is not None:
            new = _insert_section(old, relpath, answer.section)
            if not _is_addition(old, new, answer.section):
                raise LLMFixError("the section would change the page's existing content, not only add to it")
        existing = {k.casefold() for k in _existing_keywords(ctx, relpath)}
        terms = [k for k in answer.keywords if k.casefold() not in existing]
        if len(existing) + len(terms) > MAX_KEYWORDS:
            raise LLMFixError(f"the page would have more than {MAX_KEYWORDS} keywords")
        if terms:
            try:
                new = frontmatter_extend(new, KEY, terms)
            except ValueError as exc:
                raise LLMFixError(f"the keywords cannot be added: {exc}") from exc
        change = Change(relpath, old, new, digest)

        def takes_effect(after: FileResult) -> bool:
            if after.config is None or any(f.code == "keywords-invalid" for f in after.findings):
                return False
            if terms and not _keywords_added(after, terms):
                return False
            return answer.section is None or any(e.text == answer.section.heading for e in after.outline)

        parts = []
        if answer.section is not None:
            parts.append(f"a section \"{answer.section.heading}\"")
        if terms:
            parts.append(f"keywords {', '.join(terms)}")
        rationale = (f"{fixer.model} drafts {' and '.join(parts) or 'no change'} for the agents' questions "
                     f"{_quoted(questions)}: {answer.rationale}")
        kind = SECTION_KIND if answer.section is not None else KEYWORDS_KIND
        try:
            fix = make_fix(ctx, kind=kind, relpath=relpath, change=change, rationale=rationale, source=fixer.model,
                           finding=_finding(relpath, questions, feedback), expect=takes_effect)
        except (ConfigError, ValueError) as exc:
            raise LLMFixError(f"the answer could not be turned into a change: {exc}") from exc
        if fix is None:
            raise LLMFixError("the change would not take effect (the page already has it, or it does not parse)")
        return fix
    except LLMFixError as exc:
        log.warning("LLM content fix for %s with %s failed, no proposal: %s", relpath, fixer.model, exc)
        raise
