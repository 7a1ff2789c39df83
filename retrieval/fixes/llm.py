"""The LLM fixer: one file's outline and statistics in, one validated proposal (or a logged failure) out.

Works against any OpenAI-compatible chat completions endpoint through the `openai` package. The
model sees a compact outline of ONE file (headings with levels, lines and section sizes, the current
strategy and where it is set, chunk sizes, findings, the corpus taxonomy), never document text and
never the whole corpus. It must answer with one JSON object (`response_format=json_object`):

    {"strategy": {"chunk_by": "h1|h2|h3|file", "max_chunk_size"?: int, "min_chunk_size"?: int},
     "metadata"?: {"<taxonomy key>": "<value>"},
     "rationale": "<why, for the reviewer>"}

The answer is validated strictly (known keys only, a strategy `parse_strategy` accepts, taxonomy keys
and allowed values only, a non-empty rationale, a complete response). Anything else is a logged
failure and produces no proposal; a valid answer becomes the same kind of proposal the heuristic
fixer makes (a manifest override, a front matter change or a hint comment edit).
"""

from __future__ import annotations

import json
import logging
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from retrieval.embeddings.openai_api import (
    DEFAULT_BASE_URL,
    MAX_BACKOFF,
    _is_retryable_status,
    _retry_after,
    _server_message,
)
from retrieval.errors import ConfigError, LLMFixError
from retrieval.ingest.manifest import (
    DEFAULT_MAX_CHUNK_SIZE,
    STRATEGIES,
    Strategy,
    parse_metadata,
    parse_strategy,
)

from .base import (
    FixContext,
    ProposedFix,
    change_file_config,
    evaluate_change,
    make_fix,
    median_size,
    strategy_dict,
    strategy_source,
)

log = logging.getLogger("retrieval.fixes")

ANSWER_KEYS = {"strategy", "metadata", "rationale"}
MAX_RATIONALE = 2_000
SYSTEM_PROMPT = f"""You review how ONE markdown documentation file is split into chunks for a search engine \
that serves AI agents. A split level chunk_by=hN starts a chunk at every heading of level N or above; \
chunk_by=file keeps the whole file as one chunk. Sections larger than max_chunk_size are split further \
automatically (default max_chunk_size: {DEFAULT_MAX_CHUNK_SIZE}); min_chunk_size merges tiny leftover \
parts (default: none). Chunks of roughly 300 to 3000 characters \
retrieve best: each should answer one question on its own.

You get the file's outline and statistics as JSON (no document text). Decide the best strategy for this \
file and, only when the taxonomy lists a key the file lacks or has wrong, the metadata it should carry.

Answer with ONE JSON object and nothing else:
{{"strategy": {{"chunk_by": one of {json.dumps(list(STRATEGIES))}, "max_chunk_size": optional positive integer, \
"min_chunk_size": optional positive integer}},
 "metadata": optional object {{"<taxonomy key>": "<value>"}},
 "rationale": "one to three sentences for the human who reviews the change"}}
"strategy" is required: repeat the current strategy to keep it. Use only taxonomy keys listed under \
"taxonomy" and, where a key lists "allowed" values, only those values. No other keys."""


@dataclass(frozen=True)
class Answer:
    strategy: Strategy
    metadata: dict[str, str]
    rationale: str


@dataclass
class LLMResult:
    relpath: str
    fix: ProposedFix | None = None
    failure: str = ""  # why no proposal came out of a failed request or a bad answer
    note: str = ""  # e.g. "no change suggested"
    raw: str = ""


def file_outline(ctx: FixContext, relpath: str, *, max_headings: int = 150, max_chunks: int = 80) -> dict:
    """The compact, text-free description of one file that the model sees."""
    result = ctx.results[relpath]
    doc = ctx.doc(relpath)
    headings = [b for b in doc.blocks if b.kind == "heading"]
    total_lines = len(doc.lines)

    def chars(start: int, end: int) -> int:
        return sum(len(line) + 1 for line in doc.lines[start:end])

    outline = []
    for n, block in enumerate(headings[:max_headings]):
        next_any = headings[n + 1].start if n + 1 < len(headings) else total_lines
        next_peer = next((h.start for h in headings[n + 1:] if h.level <= block.level), total_lines)
        outline.append({"level": block.level, "text": block.text[:120], "line": block.start + 1,
                        "section_chars": chars(block.start, next_any), "subtree_chars": chars(block.start, next_peer)})
    sizes = [len(c.content) for c in result.chunks]
    config = result.config
    source = strategy_source(ctx, relpath)
    taxonomy = {}
    for key, conf in ctx.scan.taxonomy_config().items():
        taxonomy[key] = {"description": conf.description or "", "allowed": list(conf.values) if conf.values else None}
    for other in ctx.results.values():
        for key in (other.config.metadata if other.config else {}):
            taxonomy.setdefault(key, {"description": "", "allowed": None})
    return {
        "file": relpath,
        "title": result.title,
        "chars": len(result.content),
        "lines": total_lines,
        "current": {
            "strategy": strategy_dict(config.strategy) if config else None,
            "set_in": {"inline": "file-level hint comment", "frontmatter": "front matter",
                       "manifest": "manifest", "none": "system default"}[source.kind]
            if config and config.explicit_strategy else "system default",
            "metadata": dict(config.metadata) if config else {},
        },
        "headings": outline,
        "headings_omitted": max(0, len(headings) - max_headings),
        "chunks": {
            "count": len(sizes), "min": min(sizes, default=0), "max": max(sizes, default=0),
            "median": int(statistics.median(sizes)) if sizes else 0,
            "sizes": [[c.chunk_id.split("#", 1)[-1], len(c.content)] for c in result.chunks[:max_chunks]],
            "omitted": max(0, len(sizes) - max_chunks),
        },
        "findings": [f"{f.severity} {f.code} line {f.line}: {f.message}" for f in result.findings][:20],
        "taxonomy": taxonomy,
    }


def answer_rationale(data: object, allowed: frozenset[str] | set[str]) -> str:
    """What every fixer's answer must be: a JSON object of known keys with a short, non-empty rationale."""
    if not isinstance(data, dict):
        raise LLMFixError(f"answer is {type(data).__name__}, not a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise LLMFixError(f"answer has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise LLMFixError("answer has no rationale (a non-empty string is required)")
    if len(rationale) > MAX_RATIONALE:
        raise LLMFixError(f"rationale is longer than {MAX_RATIONALE} characters")
    return rationale


def validate_answer(data: object, *, taxonomy: dict[str, tuple[str, ...] | None]) -> Answer:
    """Strict: unknown keys, an invalid strategy, unknown taxonomy keys or values are errors."""
    rationale = answer_rationale(data, ANSWER_KEYS)
    if "strategy" not in data:
        raise LLMFixError("answer has no strategy (required; the current one repeats to keep it)")
    if not isinstance(data["strategy"], dict):
        raise LLMFixError("strategy must be an object like {\"chunk_by\": \"h2\"}")
    try:
        strategy = parse_strategy(data["strategy"], "answer strategy")
        metadata = parse_metadata(data.get("metadata"), "answer metadata")
    except ConfigError as exc:
        raise LLMFixError(str(exc)) from exc
    for key, value in metadata.items():
        if key not in taxonomy:
            raise LLMFixError(f"metadata key {key!r} is not in the taxonomy ({', '.join(sorted(taxonomy)) or 'none'})")
        allowed = taxonomy[key]
        if allowed is not None and value not in allowed:
            raise LLMFixError(f"metadata {key}={value!r} is not allowed; allowed: {', '.join(allowed)}")
    return Answer(strategy, metadata, " ".join(rationale.split()))


class LLMFixer:
    """One chat completion per file; 408/429/5xx and connection errors retry with backoff, honouring
    Retry-After. The SDK's own retries are off so the policy is ours and testable."""

    def __init__(self, *, model: str, base_url: str | None = None, api_key: str | None = None,
                 max_retries: int = 4, timeout: float = 60.0, retry_base_delay: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep):
        if not api_key:
            raise LLMFixError("the LLM fixer needs an API key: set OPENAI_API_KEY (any non-empty value for a "
                              "local server that ignores it)")
        import openai  # on use: a web worker that never calls the API need not hold its 14 MB

        # not None: the SDK would read OPENAI_BASE_URL from the environment itself
        self._client = openai.OpenAI(base_url=base_url or DEFAULT_BASE_URL, api_key=api_key, max_retries=0, timeout=timeout)
        self.base_url = str(self._client.base_url)
        self.model = model
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self._sleep = sleep

    def complete(self, outline: dict, *, system: str = SYSTEM_PROMPT, user: str | None = None) -> str:
        """The answer's text; raises LLMFixError when the endpoint fails or the answer is incomplete.
        `system`: another task's instructions (retrieval/fixes/llm_content.py drafts page content); `user`: the
        user message as written (it fences untrusted text itself) instead of `outline` as JSON."""
        import openai

        content = user if user is not None else json.dumps(outline, ensure_ascii=False, separators=(",", ":"))
        messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        attempt = 0
        while True:
            try:
                response = self._client.chat.completions.create(
                    model=self.model, messages=messages, response_format={"type": "json_object"}, temperature=0)
                break
            except openai.APIStatusError as exc:
                if not _is_retryable_status(exc.status_code):
                    raise LLMFixError(f"{self.base_url} refused the request (HTTP {exc.status_code}): "
                                      f"{_server_message(exc)}") from exc
                failure: Exception = exc
                wait_for = _retry_after(exc.response.headers)
            except openai.APIConnectionError as exc:
                failure, wait_for = exc, None
            except (openai.OpenAIError, ValueError) as exc:
                raise LLMFixError(f"{self.base_url} gave an unusable response: {exc}") from exc
            if attempt >= self.max_retries:
                status = getattr(failure, "status_code", None)
                raise LLMFixError(f"{self.base_url} still failing after {attempt + 1} attempts: "
                                  f"{f'HTTP {status}' if status else type(failure).__name__}") from failure
            if wait_for is None:
                ceiling = min(MAX_BACKOFF, self.retry_base_delay * 2**attempt)
                wait_for = ceiling / 2 + random.uniform(0, ceiling / 2)
            log.info("LLM fixer: %s, retrying in %.1fs", getattr(failure, "status_code", type(failure).__name__),
                     wait_for)
            self._sleep(wait_for)
            attempt += 1
        choice = response.choices[0] if response.choices else None
        if choice is None or not choice.message or not choice.message.content:
            raise LLMFixError("the answer is empty")
        if choice.finish_reason not in ("stop", None):
            raise LLMFixError(f"the answer is incomplete (finish_reason={choice.finish_reason})")
        return choice.message.content

    def propose(self, ctx: FixContext, relpath: str) -> LLMResult:
        """Never raises for a bad answer or a failed request: the result carries the failure, and it is logged."""
        outcome = LLMResult(relpath)
        try:
            outcome.raw = self.complete(file_outline(ctx, relpath))
            try:
                data = json.loads(outcome.raw)
            except json.JSONDecodeError as exc:
                raise LLMFixError(f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
            answer = validate_answer(data, taxonomy=_taxonomy(ctx))
            outcome.fix, outcome.note = self._to_fix(ctx, relpath, answer)
        except LLMFixError as exc:
            outcome.failure = str(exc)
            log.warning("LLM fix for %s with %s failed, no proposal: %s", relpath, self.model, exc)
        return outcome

    def _to_fix(self, ctx: FixContext, relpath: str, answer: Answer) -> tuple[ProposedFix | None, str]:
        config = ctx.results[relpath].config
        if config is None:
            raise LLMFixError(f"{relpath} could not be read, so there is nothing to change")
        current = config.strategy
        new_strategy = answer.strategy if answer.strategy != current else None
        metadata = {k: v for k, v in answer.metadata.items() if config.metadata.get(k) != v}
        if new_strategy is None and not metadata:
            log.info("LLM fix for %s with %s: no change suggested", relpath, self.model)
            return None, "no change suggested"
        if new_strategy is None:
            kind = "taxonomy-value"
        elif new_strategy.level == current.level:
            kind = "strategy-tune"
        else:  # level 0 is `file`, the coarsest; h3 the finest
            kind = "deeper-split" if new_strategy.level > current.level else "shallower-split"
        try:
            change = change_file_config(ctx, relpath, strategy=new_strategy, metadata=metadata)
            after = evaluate_change(ctx, relpath, change)
        except (ConfigError, ValueError) as exc:
            raise LLMFixError(f"the answer could not be turned into a change: {exc}") from exc
        if after.config is None or (new_strategy and after.config.strategy != new_strategy) \
                or any(after.config.metadata.get(k) != v for k, v in metadata.items()):
            raise LLMFixError("the change would not take effect where it can be written")
        summary = (f" Chunks: {len(ctx.results[relpath].chunks)} (median {median_size(ctx.results[relpath].chunks)}) "
                   f"-> {len(after.chunks)} (median {median_size(after.chunks)}).")
        parts = []
        if new_strategy is not None:
            parts.append(f"strategy {json.dumps(strategy_dict(current))} -> {json.dumps(strategy_dict(new_strategy))}")
        if metadata:
            parts.append("metadata " + ", ".join(f"{k}={v}" for k, v in metadata.items()))
        rationale = f"{self.model} suggests {'; '.join(parts)}: {answer.rationale}{summary}"
        finding = next((f.as_dict() for f in ctx.results[relpath].findings), None)
        fix = make_fix(ctx, kind=kind, relpath=relpath, change=change, rationale=rationale, source=self.model,
                       finding=finding)
        return fix, "" if fix else "no change"


def _taxonomy(ctx: FixContext) -> dict[str, tuple[str, ...] | None]:
    out: dict[str, tuple[str, ...] | None] = {k: c.values for k, c in ctx.scan.taxonomy_config().items()}
    for result in ctx.results.values():
        for key in (result.config.metadata if result.config else {}):
            out.setdefault(key, None)
    return out


def llm_candidates(ctx: FixContext, *, limit: int) -> list[str]:
    """Files most likely to need a better strategy or metadata, worst first; at most `limit`."""
    th = ctx.thresholds
    scored = []
    for relpath, result in ctx.results.items():
        if result.config is None or not result.chunks:
            continue
        sizes = [len(c.content) for c in result.chunks]
        score = 0
        codes = {f.code for f in result.findings}
        score += 3 * ("chunk-oversized" in codes) + 2 * ("taxonomy-value" in codes) + ("strategy-default" in codes)
        if max(sizes) > min(th.large_section, result.config.strategy.max_chunk_size):
            score += 2
        if len(sizes) >= th.min_chunks_for_tiny and statistics.median(sizes) < th.tiny_median:
            score += 2
        if score:
            scored.append((-score, relpath))
    return [relpath for _score, relpath in sorted(scored)[:limit]]
