"""Where a file's chunking strategy and metadata come from, and what wins when sources disagree.

Lowest to highest: the default (`**/*.md -> h2`, with a warning), the nearest manifest, its
overrides (last match wins), front matter, a file-level inline hint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.manifest import Strategy, glob_match, parse_manifest, resolve_file_config
from retrieval.ingest.validate import process_corpus


def write_corpus(root: Path, files: dict[str, str | dict]) -> Path:
    """Files by relative path; a dict value is written as a JSON manifest."""
    for relpath, content in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2) if isinstance(content, dict) else content)
    return root


def resolved(root: Path) -> dict:
    """relpath -> FileResult of every markdown file."""
    return {r.relpath: r for r in process_corpus(scan_corpus(root), workers=1)}


def manifest(**fields) -> dict:
    return {"version": "1", **fields}


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def test_nearest_manifest_governs_a_file_and_manifests_do_not_merge_across_directories(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h3", "max_chunk_size": 900},
                                   metadata={"scope": "global-guide"}),
        "guides/a.md": "# A\n",
        "sdks/go/.docs-mcp.json": manifest(metadata={"language": "go"}),
        "sdks/go/deep/b.md": "# B\n",
    })
    files = resolved(root)
    guide = files["guides/a.md"].config
    assert (guide.strategy, guide.metadata, guide.manifest_dir) == (
        Strategy("h3", max_chunk_size=900), {"scope": "global-guide"}, "")
    sdk = files["sdks/go/deep/b.md"].config
    assert sdk.manifest_dir == "sdks/go"
    assert sdk.metadata == {"language": "go"}  # no scope inherited from the root
    assert sdk.strategy == Strategy()  # and no strategy: the default applies, with a warning
    assert "strategy-default" in codes(files["sdks/go/deep/b.md"])


def test_override_globs_are_relative_to_the_manifest_directory(tmp_path):
    root = write_corpus(tmp_path, {
        "sdks/.docs-mcp.json": manifest(strategy={"chunk_by": "h2"}, overrides=[
            {"pattern": "python/*.md", "strategy": {"chunk_by": "h3"}},
            {"pattern": "sdks/go/*.md", "strategy": {"chunk_by": "file"}},
        ]),
        "sdks/python/a.md": "# A\n",
        "sdks/go/b.md": "# B\n",
    })
    files = resolved(root)
    assert files["sdks/python/a.md"].config.strategy.chunk_by == "h3"
    assert files["sdks/go/b.md"].config.strategy.chunk_by == "h2"  # a corpus-relative pattern does not match


def test_last_matching_override_wins_and_override_metadata_layers_over_the_baseline(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}, metadata={"scope": "global-guide", "tier": "free"},
                                   overrides=[
                                       {"pattern": "**/*.md", "strategy": {"chunk_by": "h1"}, "metadata": {"tier": "pro"}},
                                       {"pattern": "api/*.md", "strategy": {"chunk_by": "file"}},
                                       {"pattern": "nothing/*.md", "strategy": {"chunk_by": "h3"}},
                                   ]),
        "api/user.md": "# User\n",
        "guide.md": "# Guide\n",
    })
    files = resolved(root)
    assert files["api/user.md"].config.strategy.chunk_by == "file"
    assert files["api/user.md"].config.metadata == {"scope": "global-guide", "tier": "pro"}
    assert files["guide.md"].config.strategy.chunk_by == "h1"


@pytest.mark.parametrize(("path", "pattern", "matches"), [
    ("a.md", "*.md", True),
    ("dir/a.md", "*.md", False),
    ("dir/a.md", "**/*.md", True),
    ("a.md", "**/*.md", True),
    ("dir/sub/a.md", "dir/**", True),
    ("dir/a.md", "dir/?.md", True),
    ("dir/ab.md", "dir/?.md", False),
])
def test_glob_star_stays_in_one_directory_and_double_star_spans_directories(path, pattern, matches):
    assert glob_match(path, pattern) is matches


def test_front_matter_hint_as_a_string_wins_over_the_manifest(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}),
        "a.md": "---\nmcp_chunking_hint: file\n---\n# A\n\n## x\n\ny\n",
    })
    result = resolved(root)["a.md"]
    assert result.config.strategy.chunk_by == "file"
    assert [c.chunk_id for c in result.chunks] == ["a.md"]


def test_front_matter_hint_as_an_object_carries_sizes(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h2", "max_chunk_size": 9000}),
        "a.md": "---\nmcp_chunking_hint:\n  chunk_by: h3\n  max_chunk_size: 1200\n---\n# A\n",
    })
    assert resolved(root)["a.md"].config.strategy == Strategy("h3", max_chunk_size=1200)


def test_front_matter_metadata_wins_over_manifest_metadata_key_by_key(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}, metadata={"scope": "sdk-specific", "language": "go"}),
        "a.md": "---\nmcp_metadata:\n  scope: global-guide\n---\n# A\n",
        "b.md": "---\nmetadata:\n  language: python\n---\n# B\n",
        "c.md": "---\nmetadata:\n  language: python\nmcp_metadata:\n  language: typescript\n---\n# C\n",
    })
    files = resolved(root)
    assert files["a.md"].config.metadata == {"scope": "global-guide", "language": "go"}
    assert files["b.md"].config.metadata == {"scope": "sdk-specific", "language": "python"}
    assert files["c.md"].config.metadata["language"] == "typescript"


def test_file_level_inline_hint_wins_over_front_matter(tmp_path):
    root = write_corpus(tmp_path, {
        ".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}),
        "a.md": ("---\nmcp_chunking_hint: h1\n---\n"
                 '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n# A\n\n## x\n\n### y\n\nz\n'),
    })
    result = resolved(root)["a.md"]
    assert result.config.strategy.chunk_by == "h3"
    assert [c.chunk_id for c in result.chunks] == ["a.md#a/x/y"]


def test_file_without_any_strategy_uses_h2_and_is_warned_about(tmp_path):
    root = write_corpus(tmp_path, {"a.md": "# A\n\n## one\n\nx\n\n## two\n\ny\n"})
    result = resolved(root)["a.md"]
    assert result.config.strategy == Strategy("h2")
    assert result.config.explicit_strategy is False
    assert [c.chunk_id for c in result.chunks] == ["a.md#a/one", "a.md#a/two"]
    [warning] = result.findings
    assert (warning.severity, warning.code, warning.file) == ("warning", "strategy-default", "a.md")
    assert ".docs-mcp.json" in warning.suggestion


def test_a_strategy_from_any_source_silences_the_default_warning(tmp_path):
    root = write_corpus(tmp_path, {
        "a.md": "---\nmcp_chunking_hint: h2\n---\n# A\n",
        "b.md": '<!-- mcp_chunking_hint: {"chunk_by": "h2"} -->\n# B\n',
    })
    files = resolved(root)
    assert codes(files["a.md"]) == []
    assert codes(files["b.md"]) == []


def test_resolve_file_config_applies_the_layers_in_order():
    manifests = {"": parse_manifest(json.dumps(manifest(
        strategy={"chunk_by": "h2"}, metadata={"scope": "global-guide"},
        overrides=[{"pattern": "a.md", "strategy": {"chunk_by": "h1"}}])), "")}
    assert resolve_file_config("a.md", manifests).strategy.chunk_by == "h1"
    with_front_matter = resolve_file_config("a.md", manifests, {"mcp_chunking_hint": "h3"})
    assert with_front_matter.strategy.chunk_by == "h3"
    with_hint = resolve_file_config("a.md", manifests, {"mcp_chunking_hint": "h3"}, Strategy("file"))
    assert with_hint.strategy.chunk_by == "file"


# --- errors name the file and the line ---------------------------------------------------

def manifest_findings(tmp_path: Path, relpath: str, text: str) -> list:
    write_corpus(tmp_path, {relpath: text, "a.md": "# A\n"})
    return [f for f in scan_corpus(tmp_path).findings if f.code == "manifest-invalid"]


def test_invalid_manifest_json_names_the_file_and_line(tmp_path):
    [finding] = manifest_findings(tmp_path, "sdks/.docs-mcp.json",
                                  '{\n  "version": "1",\n  "strategy": {"chunk_by": "h2",}\n}\n')
    assert (finding.severity, finding.file, finding.line) == ("error", "sdks/.docs-mcp.json", 3)
    assert "invalid JSON" in finding.message


def test_unknown_manifest_key_names_the_key_the_file_and_its_line(tmp_path):
    [finding] = manifest_findings(tmp_path, ".docs-mcp.json",
                                  '{\n  "version": "1",\n  "strategy": {"chunk_by": "h2"},\n  "colour": "red"\n}\n')
    assert (finding.file, finding.line) == (".docs-mcp.json", 4)
    assert "'colour'" in finding.message
    assert "overrides" in finding.message  # the allowed keys are listed


def test_unknown_key_inside_an_override_strategy_is_reported_at_its_line(tmp_path):
    text = ('{\n  "version": "1",\n  "overrides": [\n'
            '    {"pattern": "*.md", "strategy": {"chunk_by": "h2", "max_size": 5}}\n  ]\n}\n')
    [finding] = manifest_findings(tmp_path, ".docs-mcp.json", text)
    assert finding.line == 4
    assert "overrides[0]" in finding.message and "'max_size'" in finding.message


def test_unknown_strategy_names_the_value_the_choices_and_the_line(tmp_path):
    [finding] = manifest_findings(tmp_path, "b/.docs-mcp.json",
                                  '{\n  "version": "1",\n  "strategy": {\n    "chunk_by": "h4"\n  }\n}\n')
    assert (finding.file, finding.line) == ("b/.docs-mcp.json", 4)
    assert "'h4'" in finding.message and "h1, h2, h3, file" in finding.message


def test_manifest_must_declare_version_1(tmp_path):
    with pytest.raises(ConfigError, match='"version" must be "1"'):
        parse_manifest('{"strategy": {"chunk_by": "h2"}}', "")


def test_non_positive_sizes_are_refused():
    with pytest.raises(ConfigError, match="max_chunk_size must be a positive integer"):
        parse_manifest('{"version": "1", "strategy": {"chunk_by": "h2", "max_chunk_size": 0}}', "")


def test_unknown_strategy_in_front_matter_is_an_error_on_that_file(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}),
                                   "a.md": "---\nmcp_chunking_hint: h5\n---\n# A\n"})
    result = resolved(root)["a.md"]
    [finding] = result.findings
    assert (finding.severity, finding.code, finding.file, finding.line) == ("error", "frontmatter-invalid", "a.md", 1)
    assert "'h5'" in finding.message
    assert result.config.strategy.chunk_by == "h2"  # the rest of the configuration still applies


def test_unknown_strategy_in_an_inline_hint_names_the_file_and_line(tmp_path):
    root = write_corpus(tmp_path, {".docs-mcp.json": manifest(strategy={"chunk_by": "h2"}),
                                   "a.md": '# A\n\n<!-- mcp_chunking_hint: {"chunk_by": "h4"} -->\n## b\n\nc\n'})
    [finding] = resolved(root)["a.md"].findings
    assert (finding.code, finding.file, finding.line) == ("hint-malformed", "a.md", 3)
    assert "'h4'" in finding.message
