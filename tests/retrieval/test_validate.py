"""validate: every finding kind, with its severity, file, line and suggested fix, and the CLI around it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command

from retrieval.ingest.validate import validate_corpus

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = ROOT / "corpus" / "sample_docs"
H2 = {"version": "1", "strategy": {"chunk_by": "h2"}}


def write_corpus(root: Path, files: dict[str, str | bytes | dict]) -> Path:
    for relpath, content in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            path.write_text(json.dumps(content, indent=2))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def findings_of(root: Path, code: str | None = None) -> list:
    _scan, _results, findings = validate_corpus(root)
    return [f for f in findings if code is None or f.code == code]


def only(root: Path, code: str):
    found = findings_of(root, code)
    assert len(found) == 1, found
    finding = found[0]
    assert finding.suggestion, f"{code} has no suggested fix"
    return finding


def test_the_sample_corpus_validates_without_errors():
    _scan, results, findings = validate_corpus(SAMPLE_DOCS)
    assert len(results) >= 25
    assert [f for f in findings if f.severity == "error"] == []


def test_invalid_manifest_json_is_an_error_at_its_line(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": '{\n  "version": "1"\n  "strategy": {"chunk_by": "h2"}\n}\n',
                                   "a.md": "# A\n"})
    finding = only(root, "manifest-invalid")
    assert (finding.severity, finding.file, finding.line) == ("error", ".docs-mcp.json", 3)
    assert "Expecting ',' delimiter" in finding.message


def test_unknown_manifest_key_is_an_error_at_its_line(tmp_path):
    root = write_corpus(tmp_path, {"docs/.docs-mcp.json": '{\n  "version": "1",\n  "stratgy": {"chunk_by": "h2"}\n}\n',
                                   "docs/a.md": "# A\n"})
    finding = only(root, "manifest-invalid")
    assert (finding.severity, finding.file, finding.line) == ("error", "docs/.docs-mcp.json", 3)
    assert "'stratgy'" in finding.message


def test_a_misspelt_manifest_key_suggests_the_key_it_resembles(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": {"version": "1", "strategy": {"chunk_by": "h2"}, "overides": []},
                                   "a.md": "# A\n"})
    assert "did you mean 'overrides'?" in only(root, "manifest-invalid").message


def test_an_invalid_manifest_is_one_error_not_a_missing_strategy_per_file(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": {"version": "1", "strategy": {"chunk_by": "h2"}, "colour": 1},
                                   **{f"p{n}.md": f"# P{n}\n" for n in range(13)},
                                   "other/.docs-mcp.json": H2, "other/q.md": "# Q\n", "plain/r.md": "# R\n"})
    assert [f.file for f in findings_of(root) if f.severity == "error"] == [".docs-mcp.json"]
    assert findings_of(root, "strategy-default") == []


def test_unknown_strategy_is_an_error_at_its_line(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": '{\n  "version": "1",\n  "strategy": {"chunk_by": "h7"}\n}\n',
                                   "a.md": "# A\n"})
    finding = only(root, "manifest-invalid")
    assert (finding.severity, finding.line) == ("error", 3)
    assert "unknown strategy" in finding.message


def test_invalid_front_matter_yaml_is_an_error_naming_the_yaml_line(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": "---\ntitle: ok\ntags: [oops\n---\n# A\n"})
    finding = only(root, "frontmatter-invalid")
    assert (finding.severity, finding.file, finding.line) == ("error", "a.md", 1)
    assert "invalid YAML" in finding.message and "line 3" in finding.message


def test_front_matter_that_is_not_a_mapping_is_an_error(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": "---\n- a\n- b\n---\n# A\n"})
    assert "mapping" in only(root, "frontmatter-invalid").message


def test_taxonomy_value_outside_the_allowed_values_is_an_error(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": {**H2, "taxonomy": {"scope": {"values": ["global-guide", "sdk-specific"]}}},
        "ok.md": "---\nmcp_metadata:\n  scope: global-guide\n---\n# Ok\n",
        "bad.md": "---\nmcp_metadata:\n  scope: sdk_specific\n---\n# Bad\n",
    })
    finding = only(root, "taxonomy-value")
    assert (finding.severity, finding.file) == ("error", "bad.md")
    assert "'sdk_specific'" in finding.message and "global-guide, sdk-specific" in finding.message
    assert "taxonomy.scope.values" in finding.suggestion


def test_taxonomy_value_from_a_nested_manifest_is_checked_against_the_root_taxonomy(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": {**H2, "taxonomy": {"language": {"values": ["go", "python"]}}},
        "sdks/rust/.docs-mcp.json": {**H2, "metadata": {"language": "rust"}},
        "sdks/rust/a.md": "# A\n",
    })
    assert only(root, "taxonomy-value").file == "sdks/rust/a.md"


def test_malformed_inline_hint_json_is_an_error_at_the_comment(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": "# A\n\n<!-- mcp_chunking_hint: {chunk_by: h3} -->\n## B\n"})
    finding = only(root, "hint-malformed")
    assert (finding.severity, finding.file, finding.line) == ("error", "a.md", 3)
    assert "valid JSON" in finding.suggestion


def test_a_hint_of_valid_json_with_an_unknown_strategy_names_the_strategies_once(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": '# A\n\n<!-- mcp_chunking_hint: {"chunk_by": "h4"} -->\n## B\n'})
    finding = only(root, "hint-malformed")
    assert (finding.file, finding.line) == ("a.md", 3)
    assert "a.md" not in finding.message
    assert "chunk_by='h4'" in finding.message and "h1, h2, h3, file" in finding.suggestion
    assert "valid JSON" not in finding.suggestion


def test_section_hint_with_sizes_is_malformed(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\nintro\n\n"
        '<!-- mcp_chunking_hint: {"chunk_by": "h3", "max_chunk_size": 100} -->\n'
        "## B\n\n### c\n\nx\n")})
    finding = only(root, "hint-malformed")
    assert finding.line == 5
    assert "only chunk_by" in finding.message


def test_hint_not_followed_by_a_heading_is_orphaned(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\nintro\n\n"
        '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n\n'
        "A paragraph, not a heading.\n\n## B\n")})
    finding = only(root, "hint-orphan")
    assert (finding.severity, finding.file, finding.line) == ("error", "a.md", 5)
    assert "directly before the heading" in finding.suggestion


def test_hint_written_inside_a_paragraph_is_orphaned(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\nSome text\n"
        'and <!-- mcp_chunking_hint: {"chunk_by": "h3"} --> more.\n\n## B\n')})
    finding = only(root, "hint-orphan")
    assert (finding.file, finding.line) == ("a.md", 4)
    assert "not a standalone HTML comment" in finding.message


def test_hint_inside_a_code_fence_is_just_code(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\n```html\n"
        '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n'
        "```\n\n## B\n")})
    assert [f for f in findings_of(root) if f.severity == "error"] == []


def test_hint_asking_for_sub_headings_the_section_lacks_is_dangling(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\nintro\n\n"
        '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n\n'
        "## B\n\nOnly prose here.\n\n#### too deep\n\nx\n\n## C\n\n### not B's\n")})
    finding = only(root, "hint-dangling")
    assert (finding.severity, finding.file, finding.line) == ("error", "a.md", 5)
    assert "'B'" in finding.message and "h3" in finding.message


def test_hint_whose_section_has_the_sub_headings_is_not_dangling(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "a.md": (
        "# A\n\nintro\n\n"
        '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n'
        "## B\n\n### b1\n\nx\n")})
    assert findings_of(root) == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_escaping_the_corpus_root_is_an_error_and_its_target_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    write_corpus(outside, {"secret.md": "# Secret\n"})
    root = write_corpus(tmp_path / "docs", {".docs-mcp.json": H2, "a.md": "# A\n", "inside.md": "# Inside\n"})
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside, target_is_directory=True)
    (root / "alias.md").symlink_to(root / "inside.md")
    scan, results, findings = validate_corpus(root)
    escapes = sorted(f.file for f in findings if f.code == "path-escape")
    assert escapes == ["leak.md", "leakdir"]
    assert all(f.severity == "error" and f.suggestion for f in findings if f.code == "path-escape")
    assert sorted(r.relpath for r in results) == ["a.md", "alias.md", "inside.md"]


def test_non_utf8_file_is_an_error_at_the_first_bad_line(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "latin1.md": "# Caf\xe9\n\nline two\nna\xefve\n".encode("latin-1")})
    finding = only(root, "encoding")
    assert (finding.severity, finding.file, finding.line) == ("error", "latin1.md", 1)
    assert "UTF-8" in finding.suggestion


def test_file_without_a_strategy_is_a_warning(tmp_path):
    root = write_corpus(tmp_path, {"a.md": "# A\n"})
    finding = only(root, "strategy-default")
    assert (finding.severity, finding.file) == ("warning", "a.md")


def test_chunk_over_the_size_limit_that_cannot_be_split_is_a_warning(tmp_path):
    code = "```\n" + "x = 1\n" * 50 + "```\n"
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": {"version": "1", "strategy": {"chunk_by": "h2", "max_chunk_size": 100}},
        "a.md": f"# A\n\nintro\n\n## Code\n\n{code}",
    })
    finding = only(root, "chunk-oversized")
    assert (finding.severity, finding.file, finding.line) == ("warning", "a.md", 5)
    assert "a.md#a/code" in finding.message and "max_chunk_size 100" in finding.message


def test_an_empty_file_is_a_warning(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": H2, "empty.md": "\n"})
    assert only(root, "empty-file").severity == "warning"


def test_every_finding_serialises_with_severity_file_line_message_and_suggestion(tmp_path):
    root = write_corpus(tmp_path, {"a.md": "---\nx: [\n---\n# A\n"})
    for finding in findings_of(root):
        assert set(finding.as_dict()) == {"severity", "code", "file", "line", "message", "suggestion"}


# --- manage.py validate_docs ------------------------------------------------------------

def broken_corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "broken", {
        ".docs-mcp.json": H2,
        "a.md": "# A\n\n<!-- mcp_chunking_hint: {chunk_by: h3} -->\n## B\n",
        "b.md": "# B\n\n## ok\n\nfine\n",
    })


def run_validate(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("validate_docs", *args, "--no-progress", stdout=out)
    except SystemExit as exc:
        return int(exc.code), out.getvalue()
    return 0, out.getvalue()


def test_validate_docs_prints_each_finding_with_location_and_fix_and_exits_1_on_errors(tmp_path):
    code, output = run_validate("--source", str(broken_corpus(tmp_path)))
    assert code == 1
    assert "a.md:3: error: malformed mcp_chunking_hint" in output
    assert "[hint-malformed]" in output
    assert "    fix: write valid JSON" in output
    assert output.rstrip().endswith("2 files, 2 chunks, 1 error(s), 0 warning(s)")


def test_validate_docs_exits_0_on_the_sample_corpus():
    code, output = run_validate("--source", str(SAMPLE_DOCS))
    assert code == 0
    assert " 0 error(s)" in output


def test_validate_docs_json_lists_findings_and_counts(tmp_path):
    code, output = run_validate("--source", str(broken_corpus(tmp_path)), "--json")
    assert code == 1
    report = json.loads(output)
    assert (report["files"], report["chunks"], report["errors"]) == (2, 2, 1)
    assert report["findings"] == [{
        "severity": "error", "code": "hint-malformed", "file": "a.md", "line": 3,
        "message": "malformed mcp_chunking_hint: Expecting property name enclosed in double quotes",
        "suggestion": 'write valid JSON, e.g. <!-- mcp_chunking_hint: {"chunk_by": "h3"} -->',
    }]


def test_validate_docs_refuses_a_missing_directory(tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="does not exist"):
        call_command("validate_docs", "--source", str(tmp_path / "nope"), "--no-progress")
