"""Split a parsed markdown document into chunks along its heading structure.

Rules (the build pipeline contract plus the choices written down in docs/chunking.md):
- The split level L comes from the strategy (`h1`..`h3`; `file` means no split). Everything
  before the first level-L heading is the preamble (`#_preamble`). After it, every heading
  of level <= L starts a chunk, so an `##` that follows `###` chunks is not swallowed by them.
- A section hint (inline comment right before a heading) splits that section at a deeper
  level.
- A chunk is the exact source slice from its first line to the next chunk's first line:
  sibling blocks (paragraphs, code, tables, lists) stay together, a fence is never cut.
- A chunk that holds nothing but its heading is folded into the next, deeper chunk.
- Oversized chunks split again at the next deeper heading level present, then at block
  boundaries (parts 2.. get `-part-N`); a single block larger than the limit stays whole.
- Parts smaller than `min_chunk_size` merge into the previous part of the same section.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.format.slugs import RESERVED_PREAMBLE, SlugScope, slugify, unique_ids
from retrieval.format.terms import identifier_text

from .manifest import Strategy
from .navigation import link_share as _link_share
from .parsing import HINT_RE, Block, ParsedDocument


@dataclass
class Chunk:
    chunk_id: str
    filepath: str
    heading: str
    heading_level: int
    breadcrumb: str
    content: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    chunk_index: int  # 0-based position in the file
    context: str  # "Title > Ancestor > Heading", prefixed to the embedding input only
    ident: str = ""  # identifier terms (retrieval/terms.py) for the whitespace-tokenised FTS column
    keywords: str = ""  # the page's front matter keywords, comma-separated (retrieval/ingest/keywords.py)

    @property
    def embed_text(self) -> str:
        head = self.context
        if self.keywords and self.chunk_index == 0:  # once per page: it describes the page, not each section
            head = f"{head}\nKeywords: {self.keywords}" if head else f"Keywords: {self.keywords}"
        return f"{head}\n\n{self.content}" if head else self.content

    @property
    def link_share(self) -> float:
        """Share of the body that is navigation (retrieval/ingest/navigation.py), a ranking prior."""
        return _link_share(self.content)


@dataclass
class _Heading:
    block: int
    level: int
    text: str
    path: str  # full slug path from the heading tree, e.g. "payments/create-a-payment"
    ancestors: tuple[str, ...]  # texts of enclosing headings


@dataclass
class _Segment:
    start: int  # block index
    end: int  # block index, exclusive
    level: int  # level of the heading that starts it; 0 for preamble/file
    path: str  # slug path; "" for file, RESERVED_PREAMBLE for preamble
    heading: _Heading | None
    part: int = 1


def heading_tree(doc: ParsedDocument) -> dict[int, _Heading]:
    """Slug path and ancestors of every heading, with unique slugs per parent."""
    stack: list[_Heading] = []
    scopes: dict[str, SlugScope] = {}
    out: dict[int, _Heading] = {}
    for index, block in enumerate(doc.blocks):
        if block.kind != "heading":
            continue
        while stack and stack[-1].level >= block.level:
            stack.pop()
        parent = stack[-1].path if stack else ""
        slug = scopes.setdefault(parent, SlugScope()).issue(slugify(block.text))
        path = f"{parent}/{slug}" if parent else slug
        heading = _Heading(index, block.level, block.text, path, tuple(h.text for h in stack))
        out[index] = heading
        stack.append(heading)
    return out


def chunk_document(filepath: str, doc: ParsedDocument, strategy: Strategy,
                   section_hints: dict[int, int] | None = None) -> list[Chunk]:
    """section_hints maps a heading's block index to the level its section splits at (0: not at all)."""
    if not doc.blocks:
        return []
    headings = heading_tree(doc)
    segments = _split(doc, headings, strategy.level, section_hints or {})
    segments = _fold_heading_only(doc, segments)
    sized: list[_Segment] = []
    for segment in segments:
        sized.extend(_refine(doc, headings, segment, strategy.max_chunk_size))
    if strategy.min_chunk_size:
        sized = _merge_small_parts(doc, sized, strategy.min_chunk_size)
    return _materialize(filepath, doc, headings, sized)


def _split(doc: ParsedDocument, headings: dict[int, _Heading], level: int,
           hints: dict[int, int]) -> list[_Segment]:
    n = len(doc.blocks)
    if level == 0:
        return [_Segment(0, n, 0, "", None)]
    starts: list[int] = []
    active: list[tuple[int, int]] = []  # (hinted heading level, split level inside it)
    for index in sorted(headings):
        heading = headings[index]
        while active and heading.level <= active[-1][0]:
            active.pop()
        split_level = active[-1][1] if active else level
        # Headings above the split level open chunks only once chunking has begun (a title and its
        # intro before the first split-level heading are the preamble), unless a hint names them.
        if heading.level <= split_level and (starts or heading.level == split_level or index in hints):
            starts.append(index)
        if index in hints:
            active.append((heading.level, max(hints[index], heading.level)))
    if not starts:  # no heading at the split level: one preamble chunk
        return [_Segment(0, n, 0, RESERVED_PREAMBLE, None)]
    segments = []
    if starts[0] > 0:
        segments.append(_Segment(0, starts[0], 0, RESERVED_PREAMBLE, None))
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else n
        heading = headings[start]
        segments.append(_Segment(start, end, heading.level, heading.path, heading))
    return segments


def _fold_heading_only(doc: ParsedDocument, segments: list[_Segment]) -> list[_Segment]:
    """`# A` directly followed by `## x`: one chunk `a/x` holding both, not a bare-heading chunk."""
    out: list[_Segment] = []
    carry: int | None = None
    for k, segment in enumerate(segments):
        nxt = segments[k + 1] if k + 1 < len(segments) else None
        only_headings = all(_is_heading_or_hint(doc.blocks[i]) for i in range(segment.start, segment.end))
        deeper_next = nxt is not None and (nxt.level > segment.level or segment.level == 0)
        if only_headings and deeper_next:
            carry = segment.start if carry is None else carry
            continue
        if carry is not None:
            segment = _Segment(carry, segment.end, segment.level, segment.path, segment.heading)
            carry = None
        out.append(segment)
    return out


def _is_heading_or_hint(block: Block) -> bool:
    """Blocks that hold no content of their own: headings, and comments that are only chunking hints."""
    return block.kind == "heading" or (block.kind == "html" and not HINT_RE.sub("", block.text).strip())


def _size(doc: ParsedDocument, start: int, end: int) -> int:
    first = doc.blocks[start].start
    last = doc.blocks[end].start if end < len(doc.blocks) else len(doc.lines)
    return sum(len(line) + 1 for line in doc.lines[first:last])


def _refine(doc: ParsedDocument, headings: dict[int, _Heading], segment: _Segment, limit: int) -> list[_Segment]:
    if _size(doc, segment.start, segment.end) <= limit or segment.end - segment.start <= 1:
        return [segment]
    inner = [i for i in range(segment.start + 1, segment.end) if i in headings and headings[i].level > segment.level]
    if inner:
        sub_level = min(headings[i].level for i in inner)
        cuts = [i for i in inner if headings[i].level == sub_level]
        pieces = []
        if cuts[0] > segment.start:
            pieces.append(_Segment(segment.start, cuts[0], segment.level, segment.path, segment.heading))
        for k, cut in enumerate(cuts):
            end = cuts[k + 1] if k + 1 < len(cuts) else segment.end
            pieces.append(_Segment(cut, end, sub_level, headings[cut].path, headings[cut]))
        pieces = _fold_heading_only(doc, pieces)
        out: list[_Segment] = []
        for piece in pieces:
            out.extend(_refine(doc, headings, piece, limit))
        return out
    return _split_blocks(doc, segment, limit)


def _split_blocks(doc: ParsedDocument, segment: _Segment, limit: int) -> list[_Segment]:
    bounds = [segment.start]
    for index in range(segment.start + 1, segment.end):
        # a heading stays with the block that follows it: never cut right after a part's headings
        heading_only = all(doc.blocks[i].kind == "heading" for i in range(bounds[-1], index))
        if not heading_only and _size(doc, bounds[-1], index + 1) > limit:
            bounds.append(index)
    bounds.append(segment.end)
    return [_Segment(a, b, segment.level, segment.path, segment.heading, n + 1)
            for n, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def _merge_small_parts(doc: ParsedDocument, segments: list[_Segment], minimum: int) -> list[_Segment]:
    out: list[_Segment] = []
    for segment in segments:
        prev = out[-1] if out else None
        if (prev is not None and segment.part > 1 and prev.path == segment.path
                and _size(doc, segment.start, segment.end) < minimum):
            prev.end = segment.end
            continue
        out.append(_Segment(segment.start, segment.end, segment.level, segment.path, segment.heading, segment.part))
    return out


def _materialize(filepath: str, doc: ParsedDocument, headings: dict[int, _Heading],
                 segments: list[_Segment]) -> list[Chunk]:
    title = doc.title
    raw_ids = []
    for segment in segments:
        path = segment.path
        if segment.part > 1:
            path = f"{path}-part-{segment.part}" if path else f"_part-{segment.part}"
        raw_ids.append(f"{filepath}#{path}" if path else filepath)
    chunks = []
    for index, (segment, chunk_id) in enumerate(zip(segments, unique_ids(raw_ids), strict=True)):
        first_line = doc.blocks[segment.start].start if segment.start > 0 else doc.frontmatter_end
        next_line = doc.blocks[segment.end].start if segment.end < len(doc.blocks) else len(doc.lines)
        lines = doc.lines[first_line:next_line]
        while lines and not lines[-1].strip():
            lines.pop()
            next_line -= 1
        while lines and not lines[0].strip():
            lines.pop(0)
            first_line += 1
        heading = segment.heading
        if heading is not None:
            trail = [*heading.ancestors, heading.text]
            text, level = heading.text, heading.level
        else:
            text, level = title, 0
            trail = [title] if title else []
        context_parts = ([title] if title and (not trail or trail[0] != title) else []) + trail
        chunks.append(Chunk(
            chunk_id=chunk_id,
            filepath=filepath,
            heading=text,
            heading_level=level,
            breadcrumb=" > ".join(trail),
            content="\n".join(lines),
            start_line=first_line + 1,
            end_line=max(next_line, first_line + 1),
            chunk_index=index,
            context=" > ".join(context_parts),
            ident=identifier_text(text, "\n".join(lines)),
        ))
    return chunks
