"""Fix proposals: the heuristic fixer, the LLM fixer (against a local OpenAI-protocol server), and
approving / rejecting them safely (atomic, hash-checked, never outside the corpus root)."""

from __future__ import annotations

import json
import logging
import os
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from corpus.errors import FixError, UnsafeFixTarget
from corpus.fix_decisions import fix_approve, fix_approve_many, fix_preview, fix_reject, fix_reject_many
from corpus.fixes import fix_scan, fix_scan_report
from corpus.models import Corpus, FixDecision, FixProposal
from retrieval.fixes.apply import UnsafeTarget, resolve_target
from retrieval.fixes.edits import content_hash, unified_diff
from retrieval.fixes.frontmatter_edits import frontmatter_set
from retrieval.fixes.heuristics import analyse_corpus, heuristic_fixes, repair_hint
from retrieval.fixes.json_edits import json_append
from retrieval.fixes.llm import LLMFixer, file_outline
from retrieval.ingest.manifest import parse_manifest, resolve_file_config
from tests.conftest import SAMPLE_DOCS
from tests.openai_stub import openai_stub

LOREM = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
ROOT_MANIFEST = {"version": "1", "strategy": {"chunk_by": "h2"},
                 "taxonomy": {"scope": {"values": ["global-guide", "sdk-specific"]}}}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def manifest(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def big_file() -> str:
    subs = "".join(f"### Step {n}\n\n{LOREM * 25}\n\n" for n in range(7))
    return f"# Big guide\n\nIntro.\n\n## Setup\n\n{subs}## Later\n\nShort section.\n"


def tiny_file() -> str:
    return "# Glossary\n\n" + "".join(f"## Term {n}\n\nMeans {n}.\n\n" for n in range(8))


def normal_file(title: str) -> str:
    return f"# {title}\n\n{LOREM * 3}\n\n## Usage\n\n{LOREM * 8}\n\n## Options\n\n{LOREM * 6}\n"


def fixes_by_kind(root: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for fix in heuristic_fixes(analyse_corpus(root)):
        out.setdefault(fix.kind, []).append(fix)
    return out


def apply_fix_text(root: Path, fix) -> None:
    (root / fix.target_path).write_text(fix.new_text, encoding="utf-8")


@pytest.fixture
def drift_corpus(tmp_path) -> Path:
    """A corpus with a root manifest and one problem of each heuristic kind."""
    return write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest(ROOT_MANIFEST),
        "guides/big.md": big_file(),
        "guides/glossary.md": tiny_file(),
        "guides/ok.md": normal_file("Fine"),
        "guides/typo.md": "---\ntitle: Typo\nmcp_metadata:\n  scope: Global_Guide\n---\n" + normal_file("Typo"),
        "guides/hints.md": ("# Hints\n\n<!-- mcp_chunking_hint: {chunk_by: h3} -->\n## Deep\n\nText.\n\n### Inner\n\nMore.\n\n"
                            "<!-- mcp_chunking_hint: {\"chunk_by\": \"h3\"} -->\n\nA paragraph.\n\n"
                            "<!-- mcp_chunking_hint: {\"chunk_by\": \"h3\"} -->\n## Flat\n\nNo sub-headings.\n"),
    })


# --- heuristics (pure, no database) ----------------------------------------------------------------


def test_bootstrap_proposes_a_root_manifest_with_language_metadata_from_folders(tmp_path):
    root = write_tree(tmp_path / "docs", {
        "guides/start.md": normal_file("Start"),
        "sdks/python/client.md": normal_file("Python client"),
        "sdks/go/client.md": normal_file("Go client"),
    })
    (fix,) = fixes_by_kind(root)["bootstrap-manifest"]
    assert fix.target_path == ".docs-mcp.json" and fix.old_text is None and fix.base_hash == ""
    assert fix.diff.startswith("--- /dev/null\n+++ b/.docs-mcp.json\n")
    data = json.loads(fix.new_text)
    assert data["strategy"] == {"chunk_by": "h2"}
    assert data["overrides"] == [{"pattern": "sdks/go/**", "metadata": {"language": "go"}},
                                 {"pattern": "sdks/python/**", "metadata": {"language": "python"}}]
    parsed = parse_manifest(fix.new_text, "")
    assert resolve_file_config("sdks/go/client.md", {"": parsed}).metadata == {"language": "go"}
    assert "strategy-default" in fix.rationale or "default h2" in fix.rationale


def test_bootstrap_chooses_file_strategy_when_sections_are_tiny(tmp_path):
    root = write_tree(tmp_path / "docs", {f"ref/{n}.md": tiny_file() for n in range(3)})
    (fix,) = fixes_by_kind(root)["bootstrap-manifest"]
    assert json.loads(fix.new_text)["strategy"] == {"chunk_by": "file"}
    assert "file 100%" in fix.rationale


def test_bootstrap_is_not_proposed_when_a_root_manifest_exists(drift_corpus):
    assert "bootstrap-manifest" not in fixes_by_kind(drift_corpus)


def test_oversized_sections_get_a_deeper_split_override_in_the_manifest(drift_corpus):
    (fix,) = fixes_by_kind(drift_corpus)["deeper-split"]
    assert (fix.file, fix.target_path) == ("guides/big.md", ".docs-mcp.json")
    added = [line for line in fix.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert '+      "pattern": "guides/big.md",' in added
    assert '+      "strategy": {"chunk_by": "h3"}' in added
    assert not [line for line in fix.diff.splitlines() if line.startswith("-") and not line.startswith("---")][1:]
    assert "larger than 8000 characters" in fix.rationale
    new = parse_manifest(fix.new_text, "")
    assert resolve_file_config("guides/big.md", {"": new}).strategy.chunk_by == "h3"
    assert resolve_file_config("guides/ok.md", {"": new}).strategy.chunk_by == "h2"


def test_deeper_split_edits_front_matter_when_the_strategy_is_set_there(tmp_path):
    root = write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest(ROOT_MANIFEST),
        "big.md": "---\ntitle: Big\nmcp_chunking_hint: h2\n---\n" + big_file(),
    })
    (fix,) = fixes_by_kind(root)["deeper-split"]
    assert fix.target_path == "big.md"
    assert "-mcp_chunking_hint: h2\n+mcp_chunking_hint: h3\n" in fix.diff


def test_tiny_chunks_get_a_shallower_split(drift_corpus):
    (fix,) = fixes_by_kind(drift_corpus)["shallower-split"]
    assert fix.file == "guides/glossary.md"
    assert '"pattern": "guides/glossary.md"' in fix.diff and '"strategy": {"chunk_by": "file"}' in fix.diff
    assert "median of" in fix.rationale


def test_unknown_taxonomy_value_in_front_matter_becomes_the_nearest_allowed_value(drift_corpus):
    fixes = [f for f in fixes_by_kind(drift_corpus)["taxonomy-value"] if f.file == "guides/typo.md"]
    (fix,) = fixes
    assert fix.target_path == "guides/typo.md"
    assert "-  scope: Global_Guide\n+  scope: global-guide\n" in fix.diff
    assert fix.finding["code"] == "taxonomy-value"


def test_unknown_value_without_a_close_match_proposes_allowing_it(tmp_path):
    root = write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest(ROOT_MANIFEST),
        "a.md": "---\nmcp_metadata:\n  scope: tutorials\n---\n" + normal_file("A"),
    })
    (fix,) = fixes_by_kind(root)["taxonomy-value"]
    assert fix.target_path == ".docs-mcp.json"
    assert json.loads(fix.new_text)["taxonomy"]["scope"]["values"] == ["global-guide", "sdk-specific", "tutorials"]


def test_missing_value_is_inferred_from_folders_tagged_like_their_siblings(tmp_path):
    root = write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest({**ROOT_MANIFEST, "overrides": [
            {"pattern": "sdks/python/**", "metadata": {"language": "python"}},
            {"pattern": "sdks/go/**", "metadata": {"language": "go"}}]}),
        "sdks/python/a.md": normal_file("Py"),
        "sdks/go/a.md": normal_file("Go"),
        "sdks/ruby/a.md": normal_file("Ruby A"),
        "sdks/ruby/b.md": normal_file("Ruby B"),
        "guides/a.md": normal_file("Guide"),
    })
    (fix,) = fixes_by_kind(root)["taxonomy-value"]
    assert fix.target_path == ".docs-mcp.json"
    assert '+      "pattern": "sdks/ruby/**",\n+      "metadata": {"language": "ruby"}\n' in fix.diff
    assert "2 file(s) under sdks/ruby/" in fix.rationale


def test_hint_problems_are_repaired_or_removed_in_one_proposal(drift_corpus):
    (fix,) = fixes_by_kind(drift_corpus)["hint-fix"]
    assert fix.file == fix.target_path == "guides/hints.md"
    assert '-<!-- mcp_chunking_hint: {chunk_by: h3} -->\n+<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->' in fix.diff
    removed = [line for line in fix.diff.splitlines() if line.startswith("-<!--")]
    assert len(removed) == 3  # the malformed line (rewritten), the orphan and the dangling hint
    assert "hint-malformed at line 3" in fix.rationale and "hint-dangling" in fix.rationale
    apply_fix_text(drift_corpus, fix)
    ctx = analyse_corpus(drift_corpus)
    assert not [f for f in ctx.findings if f.code.startswith("hint-")]


@pytest.mark.parametrize("raw, expected", [
    ("{chunk_by: h3}", "h3"), ("'file'", "file"), ("h1", "h1"), ('{"chunk_by": "h2",}', "h2"), ("{chunk_by: h9}", None),
])
def test_repair_hint_reads_what_the_author_meant(raw, expected):
    repaired = repair_hint(raw)
    assert (repaired.chunk_by if repaired else None) == expected


def test_the_sample_corpus_needs_no_fixes():
    assert heuristic_fixes(analyse_corpus(SAMPLE_DOCS)) == []


def test_applying_every_heuristic_fix_converges(drift_corpus):
    for _round in range(4):
        fixes = heuristic_fixes(analyse_corpus(drift_corpus))
        if not fixes:
            break
        apply_fix_text(drift_corpus, fixes[0])
    assert heuristic_fixes(analyse_corpus(drift_corpus)) == []


def test_manifest_edits_keep_the_authors_formatting():
    text = (SAMPLE_DOCS / ".docs-mcp.json").read_text()
    new = json_append(text, ["overrides"], {"pattern": "x.md", "strategy": {"chunk_by": "h3"}})
    diff = unified_diff(".docs-mcp.json", text, new).splitlines()
    assert [line for line in diff if line.startswith("-") and line != "--- a/.docs-mcp.json"] == []
    assert [line for line in diff if line.startswith("+") and line != "+++ b/.docs-mcp.json"] == [
        "+    },", "+    {", '+      "pattern": "x.md",', '+      "strategy": {"chunk_by": "h3"}']
    assert json.loads(new)["overrides"][-1] == {"pattern": "x.md", "strategy": {"chunk_by": "h3"}}


def test_front_matter_edits_keep_crlf_and_bom():
    text = "\ufeff---\r\ntitle: A\r\n---\r\n# A\r\n"
    new = frontmatter_set(text, "mcp_metadata", "go", subkey="language")
    assert new == "\ufeff---\r\ntitle: A\r\nmcp_metadata:\r\n  language: go\r\n---\r\n# A\r\n"


# --- storing, approving, rejecting ------------------------------------------------------------------


@pytest.fixture
def reviewer(django_user_model):
    return django_user_model.objects.create_user("reviewer", is_staff=True)  # no password: no slow hashing


@pytest.fixture
def corpus(db, drift_corpus) -> Corpus:
    return Corpus.objects.create(name="drift", source_dir=str(drift_corpus))


def proposal_of(corpus: Corpus, kind: str, file: str | None = None) -> FixProposal:
    qs = corpus.fix_proposals.filter(kind=kind)
    return qs.get(file=file) if file else qs.get()


def test_fix_scan_stores_pending_proposals_and_never_duplicates_them(corpus):
    first = fix_scan(corpus=corpus)
    assert {p.kind for p in first} == {"deeper-split", "shallower-split", "taxonomy-value", "hint-fix"}
    assert all(p.status == FixProposal.PENDING and p.source == "heuristic" for p in first)
    again = fix_scan(corpus=corpus)
    assert [p.pk for p in again] == [p.pk for p in first]
    assert corpus.fix_proposals.count() == len(first)
    hint = proposal_of(corpus, "hint-fix")
    path = Path(corpus.source_dir) / hint.target_path
    assert hint.base_hash == content_hash(path.read_bytes()) and hint.old_content == path.read_text()


def test_approve_applies_the_change_atomically_and_records_who(corpus, reviewer):
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "deeper-split")
    root = Path(corpus.source_dir)
    before = set(os.listdir(root))
    applied = fix_approve(proposal=proposal, user=reviewer)
    assert applied.status == FixProposal.APPLIED
    assert (root / ".docs-mcp.json").read_text() == proposal.new_content
    assert set(os.listdir(root)) == before  # no temp file left behind
    (decision,) = applied.decisions.all()
    assert (decision.action, decision.username, decision.user, decision.status_after) == (
        FixDecision.APPROVE, "reviewer", reviewer, FixProposal.APPLIED)
    assert applied.decided_by == "reviewer" and applied.decided_at is not None
    with pytest.raises(FixError, match="only pending"):
        fix_approve(proposal=applied, user=reviewer)


def test_approve_marks_the_proposal_stale_and_writes_nothing_when_the_file_changed(corpus, reviewer):
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "hint-fix")
    path = Path(corpus.source_dir) / proposal.target_path
    edited = path.read_text() + "\nAn author's edit.\n"
    path.write_text(edited)
    result = fix_approve(proposal=proposal, user=reviewer)
    assert result.status == FixProposal.STALE and "changed since" in result.decision_note
    assert path.read_text() == edited
    assert result.decisions.get().action == FixDecision.STALE


def test_bootstrap_goes_stale_when_a_manifest_appeared_meanwhile(tmp_path, db, reviewer):
    root = write_tree(tmp_path / "docs", {"a.md": normal_file("A")})
    corpus = Corpus.objects.create(name="fresh", source_dir=str(root))
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "bootstrap-manifest")
    assert proposal.base_hash == FixProposal.ABSENT_HASH and not proposal.target_existed
    (root / ".docs-mcp.json").write_text('{"version": "1"}\n')
    assert fix_approve(proposal=proposal, user=reviewer).status == FixProposal.STALE
    assert (root / ".docs-mcp.json").read_text() == '{"version": "1"}\n'


def test_bootstrap_creates_the_manifest_when_approved(tmp_path, db, reviewer):
    root = write_tree(tmp_path / "docs", {"a.md": normal_file("A")})
    corpus = Corpus.objects.create(name="fresh", source_dir=str(root))
    fix_scan(corpus=corpus)
    proposal = fix_approve(proposal=proposal_of(corpus, "bootstrap-manifest"), user=reviewer)
    assert proposal.status == FixProposal.APPLIED
    assert json.loads((root / ".docs-mcp.json").read_text())["strategy"] == {"chunk_by": "h2"}
    assert oct((root / ".docs-mcp.json").stat().st_mode & 0o777) == oct(0o644)


def test_applying_one_proposal_makes_the_others_on_the_same_file_stale(corpus, reviewer):
    fix_scan(corpus=corpus)
    deeper, shallower = proposal_of(corpus, "deeper-split"), proposal_of(corpus, "shallower-split")
    assert deeper.target_path == shallower.target_path == ".docs-mcp.json"
    results = fix_approve_many(proposals=[shallower, deeper], user=reviewer)
    assert sorted(p.status for p in results) == [FixProposal.APPLIED, FixProposal.STALE]
    stale = next(p for p in results if p.status == FixProposal.STALE)
    assert stale.decisions.get().username == "system"
    fresh = fix_scan(corpus=corpus)  # re-proposed against the new manifest text
    assert stale.kind in {p.kind for p in fresh if p.status == FixProposal.PENDING}


def test_reject_records_who_and_why(corpus, reviewer):
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "shallower-split")
    with pytest.raises(FixError, match="needs a reason"):
        fix_reject(proposal=proposal, user=reviewer, reason="  ")
    rejected = fix_reject(proposal=proposal, user=reviewer, reason="The glossary is meant to be granular.")
    assert (rejected.status, rejected.decided_by, rejected.decision_note) == (
        FixProposal.REJECTED, "reviewer", "The glossary is meant to be granular.")
    decision = rejected.decisions.get()
    assert (decision.action, decision.user, decision.note) == (
        FixDecision.REJECT, reviewer, "The glossary is meant to be granular.")
    with pytest.raises(FixError):
        fix_approve(proposal=rejected, user=reviewer)
    fix_scan(corpus=corpus)  # the same change is not proposed again for the same file state
    assert corpus.fix_proposals.filter(kind="shallower-split").count() == 1


def test_bulk_reject_needs_a_reason_and_records_each(corpus, reviewer):
    proposals = fix_scan(corpus=corpus)
    with pytest.raises(FixError):
        fix_reject_many(proposals=proposals, user=reviewer, reason="")
    done = fix_reject_many(proposals=proposals, user=reviewer, reason="not now")
    assert {p.status for p in done} == {FixProposal.REJECTED}
    assert FixDecision.objects.filter(action=FixDecision.REJECT, note="not now").count() == len(proposals)


def test_scan_marks_open_proposals_stale_when_their_target_changed(corpus):
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "taxonomy-value", "guides/typo.md")
    (Path(corpus.source_dir) / "guides/typo.md").write_text(normal_file("Rewritten"))
    report = fix_scan_report(corpus=corpus)
    proposal.refresh_from_db()
    assert proposal.status == FixProposal.STALE and report.marked_stale == 1


@pytest.mark.parametrize("target", [
    "../outside.md", "guides/../../outside.md", "/tmp/outside.md", "~/outside.md", "guides\\..\\x.md",
    "linked/a.md", "link.md", "guides/notes.txt", ".git/config.md", "",
])
def test_targets_outside_the_corpus_root_are_refused(corpus, reviewer, tmp_path, target):
    root = Path(corpus.source_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("secret\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "link.md").symlink_to(outside / "a.md")
    victim = tmp_path / "outside.md"
    victim.write_text("untouched\n")
    proposal = FixProposal.objects.create(
        corpus=corpus, file="x.md", kind="hint-fix", rationale="evil", diff="", target_path=target,
        new_content="pwned\n", base_hash=content_hash(b"secret\n") if "link" in target else "")
    with pytest.raises(UnsafeFixTarget):
        fix_approve(proposal=proposal, user=reviewer)
    proposal.refresh_from_db()
    assert proposal.status == FixProposal.REJECTED
    assert proposal.decisions.get().action == FixDecision.REFUSE
    assert (outside / "a.md").read_text() == "secret\n" and victim.read_text() == "untouched\n"
    assert not (root / "guides" / "notes.txt").exists()


def test_resolve_target_accepts_plain_paths_inside_the_root(tmp_path):
    root = write_tree(tmp_path / "docs", {"a/b.md": "x"})
    assert resolve_target(root, "a/b.md") == (root / "a/b.md").resolve()
    assert resolve_target(root, "a/.docs-mcp.json") == (root / "a/.docs-mcp.json").resolve()
    with pytest.raises(UnsafeTarget, match="does not exist"):
        resolve_target(root, "missing/dir.md")


def test_a_failed_write_leaves_the_original_and_no_temp_file(corpus, reviewer, monkeypatch):
    fix_scan(corpus=corpus)
    proposal = proposal_of(corpus, "hint-fix")
    path = Path(corpus.source_dir) / proposal.target_path
    original = path.read_bytes()

    def broken_replace(src, dst, **dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("retrieval.fixes.apply.os.replace", broken_replace)
    with pytest.raises(FixError, match="No space left"):
        fix_approve(proposal=proposal, user=reviewer)
    assert path.read_bytes() == original
    assert not [n for n in os.listdir(path.parent) if n.endswith(".docsmcp-tmp")]
    proposal.refresh_from_db()
    assert proposal.status == FixProposal.APPROVED  # can be approved again once the disk has room
    monkeypatch.undo()
    assert fix_approve(proposal=proposal, user=reviewer).status == FixProposal.APPLIED


def test_preview_shows_the_chunks_before_and_after(corpus):
    fix_scan(corpus=corpus)
    preview = fix_preview(proposal=proposal_of(corpus, "deeper-split"))
    (item,) = preview.files
    assert item.relpath == "guides/big.md"
    before, after = [c.chunk_id for c in item.before], [c.chunk_id for c in item.after]
    assert "guides/big.md#big-guide/setup" in before and "guides/big.md#big-guide/setup/step-0" not in before
    assert "guides/big.md#big-guide/setup/step-0" in after
    assert item.before_config.startswith("chunk_by=h2") and item.after_config.startswith("chunk_by=h3")


def test_preview_of_a_markdown_change(corpus):
    fix_scan(corpus=corpus)
    (item,) = fix_preview(proposal=proposal_of(corpus, "hint-fix")).files
    assert any("hint-dangling" in f for f in item.before_findings)
    assert not any("hint-" in f for f in item.after_findings)


def test_fix_scan_refuses_a_stored_chunks_corpus(db):
    corpus = Corpus.objects.create(name="stored", kind=Corpus.KIND_CHUNKS)
    with pytest.raises(FixError, match="no markdown"):
        fix_scan(corpus=corpus)


# --- the LLM fixer -----------------------------------------------------------------------------------


def llm_answer(**data) -> str:
    return json.dumps(data)


@pytest.fixture
def llm_settings(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.DOCSMCP_FIX_MODEL = "stub-model"
    return settings


def test_a_good_llm_answer_becomes_a_proposal(corpus, llm_settings):
    answer = llm_answer(strategy={"chunk_by": "h3"}, rationale="The Setup section holds seven steps.")
    with openai_stub(chat_reply=answer) as stub:
        llm_settings.OPENAI_BASE_URL = stub.base_url
        report = fix_scan_report(corpus=corpus, use_llm=True, files=["guides/ok.md"])
    (proposal,) = [p for p in report.proposals if p.source == "stub-model"]
    assert (proposal.kind, proposal.file, proposal.target_path) == ("deeper-split", "guides/ok.md", ".docs-mcp.json")
    assert "The Setup section holds seven steps." in proposal.rationale and "stub-model" in proposal.rationale
    assert '"pattern": "guides/ok.md"' in proposal.diff
    (request,) = stub.chat_requests
    assert request.body["model"] == "stub-model"
    assert request.body["response_format"] == {"type": "json_object"}
    outline = json.loads(request.body["messages"][1]["content"])
    assert outline["file"] == "guides/ok.md" and outline["current"]["strategy"]["chunk_by"] == "h2"
    assert [h["text"] for h in outline["headings"]] == ["Fine", "Usage", "Options"]
    assert LOREM.strip() not in request.body["messages"][1]["content"]  # an outline, never the text
    assert "big.md" not in request.body["messages"][1]["content"]  # one file, never the corpus


def test_a_metadata_answer_edits_the_front_matter(corpus, llm_settings):
    answer = llm_answer(strategy={"chunk_by": "h2"}, metadata={"scope": "global-guide"}, rationale="A guide.")
    with openai_stub(chat_reply=answer) as stub:
        llm_settings.OPENAI_BASE_URL = stub.base_url
        report = fix_scan_report(corpus=corpus, use_llm=True, files=["guides/ok.md"])
    (proposal,) = [p for p in report.proposals if p.source == "stub-model"]
    assert proposal.kind == "taxonomy-value" and proposal.target_path == ".docs-mcp.json"
    assert '"metadata": {"scope": "global-guide"}' in proposal.diff


@pytest.mark.parametrize("reply, why", [
    ("Sure! Use h3.", "not JSON"),
    ('{"strategy": {"chunk_by": "h3"}, "rati', "not JSON"),  # cut off mid-answer
    ("[1, 2]", "not a JSON object"),
    (llm_answer(rationale="keep it"), "no strategy"),
    (llm_answer(strategy={"chunk_by": "h3"}), "no rationale"),
    (llm_answer(strategy={"chunk_by": "h9"}, rationale="x"), "unknown strategy"),
    (llm_answer(strategy="h3", rationale="x"), "must be an object"),
    (llm_answer(strategy={"chunk_by": "h3", "depth": 2}, rationale="x"), "unknown key"),
    (llm_answer(strategy={"chunk_by": "h3", "max_chunk_size": -5}, rationale="x"), "positive integer"),
    (llm_answer(strategy={"chunk_by": "h3"}, rationale="x", confidence=0.9), "unknown key"),
    (llm_answer(strategy={"chunk_by": "h2"}, metadata={"colour": "red"}, rationale="x"), "not in the taxonomy"),
    (llm_answer(strategy={"chunk_by": "h2"}, metadata={"scope": "tutorial"}, rationale="x"), "not allowed"),
])
def test_a_bad_or_partial_llm_answer_is_a_logged_failure_without_a_proposal(corpus, llm_settings, caplog, reply, why):
    with openai_stub(chat_reply=reply) as stub, caplog.at_level(logging.WARNING, logger="retrieval.fixes"):
        llm_settings.OPENAI_BASE_URL = stub.base_url
        report = fix_scan_report(corpus=corpus, use_llm=True, files=["guides/ok.md"])
    assert not corpus.fix_proposals.filter(source="stub-model").exists()
    ((relpath, failure),) = report.llm_failures
    assert relpath == "guides/ok.md" and why in failure
    assert any("guides/ok.md" in r.getMessage() and why in r.getMessage() for r in caplog.records)


def test_an_llm_answer_that_echoes_the_current_strategy_proposes_nothing(corpus, llm_settings):
    Path(corpus.source_dir, ".docs-mcp.json").write_text(manifest(
        {**ROOT_MANIFEST, "strategy": {"chunk_by": "h2", "max_chunk_size": 6000, "min_chunk_size": 80}}))

    def echo(body: dict) -> str:
        current = json.loads(body["messages"][1]["content"])["current"]["strategy"]
        return llm_answer(strategy=current, rationale="Fine as is.")

    with openai_stub(chat_reply=echo) as stub:
        llm_settings.OPENAI_BASE_URL = stub.base_url
        report = fix_scan_report(corpus=corpus, use_llm=True, files=["guides/ok.md"])
    assert report.llm_failures == [] and not corpus.fix_proposals.filter(source="stub-model").exists()


def test_the_llm_fixer_waits_out_a_429_with_retry_after_then_succeeds(corpus, llm_settings):
    answer = llm_answer(strategy={"chunk_by": "h3"}, rationale="Deeper.")
    with openai_stub(chat_reply=answer, fail_first=1, fail_status=429, retry_after="1") as stub:
        llm_settings.OPENAI_BASE_URL = stub.base_url
        report = fix_scan_report(corpus=corpus, use_llm=True, files=["guides/ok.md"])
    assert [r.status for r in stub.chat_requests] == [429, 200]
    assert stub.chat_requests[1].at - stub.chat_requests[0].at >= 0.95  # honoured Retry-After: 1
    assert [p.source for p in report.proposals if p.source != "heuristic"] == ["stub-model"]


def test_the_llm_fixer_gives_up_after_its_retries_with_a_logged_failure(drift_corpus, caplog):
    ctx = analyse_corpus(drift_corpus)
    waits: list[float] = []
    with openai_stub(fail_always=503) as stub, caplog.at_level(logging.WARNING, logger="retrieval.fixes"):
        fixer = LLMFixer(model="m", base_url=stub.base_url, api_key="sk-test", max_retries=2, sleep=waits.append)
        outcome = fixer.propose(ctx, "guides/ok.md")
    assert outcome.fix is None and "still failing after 3 attempts" in outcome.failure
    assert len(stub.chat_requests) == 3 and len(waits) == 2
    assert "no proposal" in caplog.text


def test_a_refused_request_is_not_retried(drift_corpus):
    with openai_stub(fail_always=401) as stub:
        outcome = LLMFixer(model="m", base_url=stub.base_url, api_key="sk-test").propose(
            analyse_corpus(drift_corpus), "guides/ok.md")
    assert "HTTP 401" in outcome.failure and len(stub.chat_requests) == 1


def test_the_llm_fixer_needs_an_api_key(corpus, settings):
    settings.OPENAI_API_KEY = ""
    with pytest.raises(FixError, match="OPENAI_API_KEY"):
        fix_scan(corpus=corpus, use_llm=True)


def test_the_outline_is_compact_and_carries_the_statistics(drift_corpus):
    outline = file_outline(analyse_corpus(drift_corpus), "guides/big.md")
    setup = next(h for h in outline["headings"] if h["text"] == "Setup")
    assert setup["level"] == 2 and setup["subtree_chars"] > 8000 and setup["section_chars"] < 50
    assert outline["chunks"]["count"] == len(outline["chunks"]["sizes"])
    assert outline["taxonomy"]["scope"]["allowed"] == ["global-guide", "sdk-specific"]
    assert len(json.dumps(outline)) < len(big_file()) / 4


# --- command and task ---------------------------------------------------------------------------------


def test_fix_docs_prints_each_proposal_with_its_diff(corpus):
    out = StringIO()
    call_command("fix_docs", "--corpus", "drift", "--no-progress", stdout=out)
    text = out.getvalue()
    assert "[deeper-split] guides/big.md -> .docs-mcp.json (heuristic, pending)" in text
    assert "+++ b/.docs-mcp.json" in text and "+++ b/guides/hints.md" in text
    assert "corpus drift: 4 proposal(s), 4 new" in text
    out = StringIO()
    call_command("fix_docs", "--corpus", "drift", "--no-progress", stdout=out)
    assert "4 proposal(s), 0 new" in out.getvalue()


def test_fix_docs_with_llm(corpus, llm_settings):
    answer = llm_answer(strategy={"chunk_by": "h3"}, rationale="Deeper.")
    out, err = StringIO(), StringIO()
    with openai_stub(chat_reply=answer) as stub:
        llm_settings.OPENAI_BASE_URL = stub.base_url
        call_command("fix_docs", "--corpus", "drift", "--llm", "--model", "other-model", "--file", "guides/ok.md",
                     "--no-progress", stdout=out, stderr=err)
    assert stub.chat_requests[0].body["model"] == "other-model"
    assert "(other-model, pending)" in out.getvalue()


def test_run_fix_task_runs_inline_without_a_broker(corpus):
    from corpus.tasks import run_fix

    started = time.monotonic()
    result = run_fix.delay(corpus.pk).get()
    assert result["created"] == 4 and len(result["proposals"]) == 4 and result["llm_failures"] == 0
    assert time.monotonic() - started < 30


def test_corpus_settings_override_the_thresholds(corpus):
    corpus.settings = {"fix_thresholds": {"tiny_median": 10}}
    corpus.save()
    assert "shallower-split" not in {p.kind for p in fix_scan(corpus=corpus)}
    corpus.settings = {"fix_thresholds": {"tiny": 10}}
    corpus.save()
    with pytest.raises(FixError, match="invalid tiny"):
        fix_scan(corpus=corpus)


def test_every_kind_and_setting_is_documented():
    from dataclasses import fields

    from retrieval.fixes.base import KINDS, Thresholds

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fixes.md").read_text()
    for name in [*KINDS, "DOCSMCP_FIX_MODEL", "DOCSMCP_FIX_LLM_MAX_FILES", "OPENAI_BASE_URL", "OPENAI_API_KEY",
                 *(f.name for f in fields(Thresholds))]:
        assert f"`{name}`" in docs, name


def test_a_decider_can_be_named_without_a_user_account(corpus):
    fix_scan(corpus=corpus)
    rejected = fix_reject(proposal=proposal_of(corpus, "shallower-split"), user="api-key:ci", reason="scripted")
    decision = rejected.decisions.get()
    assert (rejected.decided_by, decision.username, decision.user) == ("api-key:ci", "api-key:ci", None)
    applied = fix_approve(proposal=proposal_of(corpus, "hint-fix"), user=None)
    assert applied.decided_by == "system"
