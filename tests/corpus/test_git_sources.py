"""Corpora built from git repositories (made here with git init, commits and tags, served as file:// URLs)."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from corpus.errors import CorpusError, SourceDirNotAllowed
from corpus.gitsource import check_git_url
from corpus.models import Corpus
from retrieval.ingest.folder import scan_corpus
from tests.cli_helpers import build_cmd
from tests.conftest import SAMPLE_DOCS
from tests.git_helpers import git, sample_repo

# slow: most tests build a git-sourced corpus on the transactional database (37 s of the fast tier)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def git_cache(tmp_path, settings):
    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    return settings.DOCSMCP_GIT_CACHE_DIR


@pytest.fixture
def repo(tmp_path):
    return sample_repo(tmp_path / "repo")


def mcp(client, url: str, method: str, params: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = client.post(url, data=json.dumps(body), content_type="application/json",
                           HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
    assert response.status_code == 200, response.content
    return response.json()


def call(client, url: str, tool: str, arguments: dict) -> dict:
    return mcp(client, url, "tools/call", {"name": tool, "arguments": arguments})["result"]


def test_build_index_from_git_registers_the_corpus_and_builds_the_refs_commit(repo, git_cache, index_root):
    code, out, err = build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "main", "--subdir", "docs")
    assert code == 0, err
    corpus = Corpus.objects.get(name="skyline")
    assert (corpus.git_url, corpus.git_ref, corpus.git_subdir, corpus.source_dir) == (repo.url, "main", "docs", "")
    stats = corpus.active_build.stats
    assert stats["revision"] == stats["source_commit"] == git(repo.path, "rev-parse", "HEAD") == corpus.latest_commit
    assert f"revision {stats['revision']}" in out
    # the same files, under the same relative paths, as the directory the repository was made from
    directory = scan_corpus(SAMPLE_DOCS)
    assert stats["total_files"] == len(directory.files)
    assert list(git_cache.glob("*.git")), "the fetch goes to a bare cache repository"


def test_a_later_build_fetches_the_newest_commit_and_reads_only_what_the_diff_names(repo, git_cache, index_root):
    assert build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "main", "--subdir", "docs")[0] == 0
    first = Corpus.objects.get(name="skyline").active_build
    repo.write("guides/retries.md", (repo.docs / "guides/retries.md").read_text() + "\n## Jitter\n\nAdd jitter.\n")
    repo.write("../README.md", "# changed outside the corpus root\n")
    commit = repo.commit("jitter")
    code, _out, err = build_cmd("--corpus", "skyline")
    assert code == 0, err
    second = Corpus.objects.get(name="skyline").active_build
    assert second.pk != first.pk
    assert second.stats["revision"] == commit
    assert second.stats["git_changed_files"] == 1
    assert second.stats["chunked_files"] == 1
    assert second.stats["reused_files"] == first.stats["total_files"] - 1


def test_findings_of_a_git_source_name_the_same_paths_as_a_directory(repo, git_cache, index_root):
    repo.write("guides/broken.md", "<!-- mcp_chunking_hint: {bad json} -->\n# Broken\n\ntext\n")
    repo.commit("broken")
    code, out, err = build_cmd("--corpus", "skyline", "--git", repo.url, "--subdir", "docs")
    assert code == 0  # the page is left out, the rest built
    assert "guides/broken.md:1: error: malformed mcp_chunking_hint" in err
    assert "1 page(s) left out for errors (hint-malformed 1)" in out


def test_a_password_in_a_git_url_is_refused_before_anything_is_stored(git_cache, index_root):
    with pytest.raises(CommandError) as exc:
        build_cmd("--corpus", "secret", "--git", "https://user:hunter2@example.com/docs.git")
    assert "password" in str(exc.value)
    assert "hunter2" not in str(exc.value)
    assert not Corpus.objects.filter(name="secret").exists()


def test_rest_and_admin_registration_is_held_to_the_allowed_urls(settings, tmp_path):
    settings.DOCSMCP_GIT_ALLOWED_URLS = ["https://git.example.com/"]
    assert check_git_url("https://git.example.com/docs.git") == "https://git.example.com/docs.git"
    with pytest.raises(SourceDirNotAllowed):
        check_git_url("https://elsewhere.example.com/docs.git")
    settings.DOCSMCP_SOURCE_ROOTS = [str(tmp_path / "allowed")]
    with pytest.raises(SourceDirNotAllowed):
        check_git_url((tmp_path / "other").as_uri())
    assert check_git_url((tmp_path / "allowed" / "repo").as_uri())
    assert check_git_url("https://anything.example.com/x.git", any_url=True)
    with pytest.raises(CorpusError):
        check_git_url("--upload-pack=touch /tmp/x", any_url=True)


def test_an_unknown_ref_is_a_clear_error_and_nothing_changes(repo, git_cache, index_root):
    code, _out, err = build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "no-such-branch")
    assert code == 1
    assert "no-such-branch" in err
    assert Corpus.objects.get(name="skyline").active_build is None


def test_if_stale_builds_only_when_the_ref_moved(repo, git_cache, index_root):
    assert build_cmd("--corpus", "skyline", "--git", repo.url, "--subdir", "docs")[0] == 0
    code, out, _err = build_cmd("--corpus", "skyline", "--if-stale")
    assert code == 0 and "up to date" in out
    builds = Corpus.objects.get(name="skyline").builds.count()
    repo.write("guides/new.md", "# New\n\nA new page.\n")
    commit = repo.commit("new page")
    code, out, err = build_cmd("--corpus", "skyline", "--if-stale")
    assert code == 0, err
    assert "building" in out
    corpus = Corpus.objects.get(name="skyline")
    assert corpus.builds.count() == builds + 1
    assert corpus.active_build.stats["revision"] == commit
    assert not corpus.is_stale


def test_if_stale_on_a_directory_compares_its_content(copy_sample_docs, index_root):
    assert build_cmd("--corpus", "dir", "--source", str(copy_sample_docs))[0] == 0
    assert "up to date" in build_cmd("--corpus", "dir", "--if-stale")[1]
    (copy_sample_docs / "guides" / "retries.md").write_text("# Retries\n\nRewritten.\n")
    assert "building" in build_cmd("--corpus", "dir", "--if-stale")[1]


# --- versions -------------------------------------------------------------------------------------


@pytest.fixture
def two_versions(repo, git_cache, index_root):
    """`skyline` v1 from tag v1 and v2 from main (v2 the default), with a page only v2 has."""
    repo.tag("v1")
    repo.write("guides/streaming.md", "# Streaming\n\n## Server-sent events\n\nZephyrstream delivers events.\n")
    repo.commit("v2 docs")
    assert build_cmd("--corpus", "skyline", "--corpus-version", "v1", "--git", repo.url, "--ref", "v1",
                     "--subdir", "docs")[0] == 0
    code, _out, err = build_cmd("--corpus", "skyline@v2", "--git", repo.url, "--ref", "main", "--subdir", "docs",
                                "--default")
    assert code == 0, err
    return repo


def test_a_second_version_reuses_the_first_versions_chunks(two_versions):
    v2 = Corpus.objects.get(name="skyline@v2")
    v1 = Corpus.objects.get(name="skyline")
    assert v2.version_of_id == v1.pk and v1.default_version == "v2"
    assert v2.active_build.stats["chunked_files"] == 1
    assert v2.active_build.stats["reused_files"] == v1.active_build.stats["total_files"]


def test_list_corpora_shows_a_corpus_once_with_its_versions_and_follows_a_new_default(two_versions):
    from corpus.serving import corpus_cards

    (card,) = [c for c in corpus_cards("streaming events") if c.name.startswith("skyline")]
    assert (card.name, card.versions, card.default_version) == ("skyline", ["v1", "v2"], "v2")
    assert card.pages == Corpus.objects.get(name="skyline@v2").active_build.stats["total_files"]
    head = Corpus.objects.get(name="skyline")
    head.default_version = "v1"
    head.save()
    (card,) = [c for c in corpus_cards() if c.name.startswith("skyline")]
    assert card.default_version == "v1"
    assert card.pages == Corpus.objects.get(name="skyline").active_build.stats["total_files"]


def test_the_docs_profile_offers_a_version_filter_only_when_there_are_versions(two_versions, client):
    tools = {t["name"]: t for t in mcp(client, "/mcp/c/skyline/", "tools/list")["result"]["tools"]}
    version = tools["search_docs"]["inputSchema"]["properties"]["version"]
    assert version["enum"] == ["v1", "v2"]
    assert "active build" in version["description"]
    pinned = {t["name"]: t for t in mcp(client, "/mcp/c/skyline@v1/", "tools/list")["result"]["tools"]}
    assert "version" not in pinned["search_docs"]["inputSchema"]["properties"]


def test_a_key_limited_to_other_corpora_gets_no_versions_from_what_another_caller_cached(two_versions, settings):
    from corpus.access import limited_to
    from corpus.serving import forget_active, version_choices

    settings.DOCSMCP_DEFAULT_CORPUS = "skyline"
    forget_active()
    assert version_choices(None) == ("skyline", ["v1", "v2"])  # an unlimited caller fills the cache
    with limited_to(["other"]):
        assert version_choices(None) == ("", [])
        assert version_choices("skyline") == ("skyline", [])
    assert version_choices(None) == ("skyline", ["v1", "v2"])


def test_the_default_version_answers_and_each_hit_says_which(two_versions, client):
    result = call(client, "/mcp/c/skyline/", "search_docs", {"query": "Zephyrstream"})
    hits = result["structuredContent"]["hits"]
    assert hits and hits[0]["filepath"] == "guides/streaming.md"
    assert hits[0]["version"] == "v2"
    assert hits[0]["revision"] == Corpus.objects.get(name="skyline@v2").active_build.stats["revision"]
    assert hits[0]["indexed_at"].endswith("+00:00")


def test_a_version_argument_or_a_pinned_url_answers_from_that_version_only(two_versions, client):
    old = call(client, "/mcp/c/skyline/", "search_docs", {"query": "Zephyrstream", "version": "v1"})
    assert all(h["filepath"] != "guides/streaming.md" for h in old["structuredContent"]["hits"])
    assert all(h["version"] == "v1" for h in old["structuredContent"]["hits"])
    pinned = call(client, "/mcp/c/skyline@v1/", "search_docs", {"query": "retries"})
    assert {h["version"] for h in pinned["structuredContent"]["hits"]} == {"v1"}
    text = call(client, "/mcp/c/skyline@v1/", "get_doc",
                {"chunk_id": pinned["structuredContent"]["hits"][0]["chunk_id"]})["content"][0]["text"]
    assert "Version: v1 | Revision: " in text


def test_a_pinned_unknown_version_is_answered_like_an_unknown_corpus_listing_the_versions(two_versions, client):
    for method, params in (
        ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ("tools/list", {}),
        ("tools/call", {"name": "search_docs", "arguments": {"query": "retries"}}),
    ):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = client.post("/mcp/c/skyline@v9/", data=json.dumps(body), content_type="application/json",
                               HTTP_ACCEPT="application/json, text/event-stream",
                               HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
        assert response.status_code == 404, (method, response.content)
        message = response.json()["error"]["message"]
        assert "no version 'v9'" in message and "v1" in message and "v2 (default)" in message


def test_an_unknown_version_argument_is_an_error_result_listing_the_versions(two_versions, client):
    result = call(client, "/mcp/c/skyline/", "search_docs", {"query": "retries", "version": "v9"})
    assert result["isError"] is True and "v1" in result["content"][0]["text"]


def test_each_tools_version_property_says_what_the_version_is_for(two_versions, client):
    tools = {t["name"]: t for t in mcp(client, "/mcp/c/skyline/", "tools/list")["result"]["tools"]}
    assert tools["search_docs"]["inputSchema"]["properties"]["version"]["description"].startswith(
        "Which version of the documentation to search:")
    read = tools["get_doc"]["inputSchema"]["properties"]["version"]["description"]
    assert read.startswith("Which version of the documentation to read the chunk from:") and "search" not in read


def test_the_documents_profile_takes_a_version_in_the_collection_name(two_versions, client):
    result = call(client, "/mcp/documents/", "documents_search",
                  {"query": "Zephyrstream", "collections": ["skyline@v1"]})
    assert not result.get("isError"), result
    assert all(item.get("version") == "v1" for item in result["structuredContent"]["results"])
    missing = call(client, "/mcp/documents/", "documents_search", {"query": "x", "collections": ["skyline@v9"]})
    assert missing["isError"] and "v2 (default)" in missing["content"][0]["text"]


def test_server_instructions_name_the_default_version_and_when_it_was_built(two_versions, client):
    init = mcp(client, "/mcp/c/skyline/", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                          "clientInfo": {"name": "t", "version": "1"}})
    text = init["result"]["instructions"]
    assert "Versions: v1, v2 (default)" in text
    assert "last built" in text


def test_a_single_version_corpus_gets_no_version_filter(copy_sample_docs, index_root, client):
    assert build_cmd("--corpus", "plain", "--source", str(copy_sample_docs))[0] == 0
    tools = {t["name"]: t for t in mcp(client, "/mcp/c/plain/", "tools/list")["result"]["tools"]}
    assert "version" not in tools["search_docs"]["inputSchema"]["properties"]
    hits = call(client, "/mcp/c/plain/", "search_docs", {"query": "retries"})["structuredContent"]["hits"]
    assert hits[0]["version"] is None and len(hits[0]["revision"]) == 16


# --- fixes --------------------------------------------------------------------------------------


def test_an_approved_fix_on_a_git_source_is_a_commit_on_a_branch_and_a_patch(tmp_path, git_cache, index_root, client):
    from corpus.fix_decisions import fix_approve
    from corpus.fixes import fix_scan
    from tests.git_helpers import Repo

    repo = Repo(tmp_path / "bare-docs")
    repo.write("guide.md", "# Guide\n\n## Install\n\nRun the installer.\n\n## Use\n\nCall it.\n")
    repo.write("api/ref.md", "# Reference\n\n## Calls\n\nEvery call.\n")
    repo.commit("docs without a manifest")
    assert build_cmd("--corpus", "nomanifest", "--git", repo.url)[0] == 0
    corpus = Corpus.objects.get(name="nomanifest")
    proposals = fix_scan(corpus=corpus)
    bootstrap = next(p for p in proposals if p.kind == "bootstrap-manifest")
    assert bootstrap.target_path == ".docs-mcp.json"  # the same path a directory source gets
    applied = fix_approve(proposal=bootstrap, user=None)
    assert applied.status == "applied"
    assert f"docsmcp/fix-{applied.pk}" in applied.decision_note
    assert not (repo.path / ".docs-mcp.json").exists()  # nothing written into a checkout
    cache = next(git_cache.glob("*.git"))
    assert git(cache, "show", f"docsmcp/fix-{applied.pk}:.docs-mcp.json") == bootstrap.new_content.strip()
    response = client.get(f"/api/v1/corpora/nomanifest/fixes/{applied.pk}/patch")
    assert response.status_code == 200, response.content
    patch = response.content.decode()
    assert "+++ b/.docs-mcp.json" in patch


def test_the_rest_api_registers_a_git_source_only_from_allowed_urls(writer_client, repo, git_cache, index_root,
                                                                     settings):
    settings.DOCSMCP_SOURCE_ROOTS = [str(repo.path.parent / "elsewhere")]
    body = {"name": "api-git", "git_url": repo.url, "git_ref": "main", "git_subdir": "docs"}
    refused = writer_client.post("/api/v1/corpora", data=json.dumps(body), content_type="application/json")
    assert refused.status_code == 400 and "DOCSMCP_SOURCE_ROOTS" in refused.json()["error"]["message"]
    settings.DOCSMCP_SOURCE_ROOTS = [str(repo.path.parent)]
    created = writer_client.post("/api/v1/corpora", data=json.dumps(body), content_type="application/json")
    assert created.status_code == 201, created.content
    assert (created.json()["git_url"], created.json()["git_subdir"], created.json()["stale"]) == (repo.url, "docs", False)
    build = writer_client.post("/api/v1/corpora/api-git/builds", data="{}", content_type="application/json")
    assert build.status_code == 202, build.content
    corpus = writer_client.get("/api/v1/corpora/api-git").json()
    assert corpus["revision"] == git(repo.path, "rev-parse", "HEAD") == corpus["latest_commit"]
    secret = writer_client.post("/api/v1/corpora", data=json.dumps({**body, "name": "pw",
                                "git_url": "https://u:pw@example.com/r.git"}), content_type="application/json")
    assert secret.status_code == 400 and "password" in secret.json()["error"]["message"]


def test_the_techdoc_profile_offers_each_version_as_a_doc_type(two_versions, client):
    tools = {t["name"]: t for t in mcp(client, "/mcp/techdoc/", "tools/list")["result"]["tools"]}
    assert {"skyline", "skyline@v1", "skyline@v2"} <= set(tools["search_documentation"]["inputSchema"]
                                                          ["properties"]["doc_type"]["enum"])
    result = call(client, "/mcp/techdoc/", "search_documentation", {"query": "retries", "doc_type": "skyline@v1"})
    items = result["content"]
    with_metadata = [item for item in items if "metadata" in item]
    assert with_metadata and all(item["metadata"]["version"] == "v1" for item in with_metadata)


def test_techdoc_reads_a_document_from_the_version_its_id_names(two_versions, client):
    """skyline's own row is v1 and v2 is the default: a v1 id must never be answered from v2."""
    result = call(client, "/mcp/techdoc/", "search_documentation", {"query": "retries", "doc_type": "skyline@v1"})
    sources = [item["metadata"]["source"] for item in result["content"] if "metadata" in item]
    assert sources and all(source.startswith("skyline@v1/") for source in sources)
    document = call(client, "/mcp/techdoc/", "get_document", {"document_id": sources[0]})
    assert document["content"][0]["metadata"]["source"] == sources[0]
    only_in_v2 = call(client, "/mcp/techdoc/", "get_document", {"document_id": "skyline@v1/guides/streaming.md"})
    assert only_in_v2.get("isError") is True
    in_v2 = call(client, "/mcp/techdoc/", "get_document", {"document_id": "skyline@v2/guides/streaming.md"})
    assert "Zephyrstream" in in_v2["content"][0]["text"]


def test_a_commits_tree_scans_like_the_same_directory(repo, git_cache):
    from retrieval.ingest import git as gitlib
    from retrieval.ingest.tree import scan_tree

    (repo.docs / "guides" / "alias.md").symlink_to("retries.md")
    (repo.docs / "escape.md").symlink_to("../README.md")
    repo.write(".hidden/secret.md", "# Hidden\n")
    commit = repo.commit("links and hidden files")
    source = gitlib.GitSource(repo.url, "main", "docs")
    assert gitlib.fetch(source, git_cache) == commit
    tree = gitlib.read_tree(source, git_cache, commit)
    from_git = scan_tree(repo.docs, tree.files, tree.links)
    from_disk = scan_corpus(repo.docs)
    assert from_git.files == from_disk.files
    assert from_git.manifest_texts == from_disk.manifest_texts
    assert {(f.code, f.file) for f in from_git.findings} == {(f.code, f.file) for f in from_disk.findings}
    assert ("path-escape", "escape.md") in {(f.code, f.file) for f in from_git.findings}


def test_the_tree_after_a_push_is_read_asking_git_only_for_the_changed_pages(repo, git_cache, monkeypatch):
    from retrieval.ingest import git as gitlib

    source = gitlib.GitSource(repo.url, "main", "docs")
    first = gitlib.read_tree(source, git_cache, gitlib.fetch(source, git_cache))
    asked: list[list[str]] = []
    real = gitlib._read_blobs

    def spy(where, shas, timeout):
        asked.append(list(shas))
        return real(where, shas, timeout)

    monkeypatch.setattr(gitlib, "_read_blobs", spy)
    repo.write("guides/retries.md", "# Retries\n\nBack off exponentially.\n")
    repo.write("guides/fx.md", "# FX\n\nQuotes refresh hourly.\n")
    repo.commit("two pages")
    second = gitlib.read_tree(source, git_cache, gitlib.fetch(source, git_cache))

    assert len(asked) == 1 and len(asked[0]) == 2  # the two new blobs; every other page as before
    assert second.files["guides/retries.md"] == b"# Retries\n\nBack off exponentially.\n"
    assert {p: b for p, b in second.files.items() if p not in ("guides/retries.md", "guides/fx.md")} == {
        p: b for p, b in first.files.items() if p != "guides/retries.md"}
    monkeypatch.setattr(gitlib, "_blobs", {})  # nothing remembered: the same tree from git alone
    assert gitlib.read_tree(source, git_cache, gitlib.fetch(source, git_cache)) == second


@pytest.mark.parametrize("profile", ["documents", "techdoc"])
def test_other_profiles_instructions_name_versions_and_build_times(two_versions, client, profile):
    init = mcp(client, f"/mcp/{profile}/", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                         "clientInfo": {"name": "t", "version": "1"}})
    assert "skyline (versions v1, v2, default v2, last built 20" in init["result"]["instructions"]


@pytest.mark.parametrize("spelling", [
    "http://git.example.com/allowed/../other/repo.git",
    "http://git.example.com/allowed/%2e%2e/other/repo.git",
    "http://git.example.com/allowed/%2E%2e/other/repo.git",
    "http://git.example.com/allowed/%252e%252e/other/repo.git",
    "http://git.example.com/allowed/..%2fother/repo.git",
    "http://git.example.com/allowed\\..\\other/repo.git",
    "http://git.example.com:8080/allowed/repo.git",
    "http://git.example.com/allowed-not/repo.git",
])
def test_dot_segments_and_escapes_cannot_widen_the_allowed_git_urls(writer_client, settings, spelling):
    settings.DOCSMCP_GIT_ALLOWED_URLS = ["http://git.example.com/allowed/"]
    body = {"name": "widened", "git_url": spelling}
    refused = writer_client.post("/api/v1/corpora", data=json.dumps(body), content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert "DOCSMCP_GIT_ALLOWED_URLS" in refused.json()["error"]["message"]
    assert not Corpus.objects.filter(name="widened").exists()


@pytest.mark.parametrize("spelling", ["HTTP://Git.Example.com:80/allowed/repo.git",
                                      "http://git.example.com/allowed/sub/../repo.git",
                                      "http://git.example.com/allowed//repo.git"])
def test_other_spellings_of_an_allowed_url_are_allowed(settings, spelling):
    settings.DOCSMCP_GIT_ALLOWED_URLS = ["http://git.example.com/allowed/"]
    assert check_git_url(spelling) == spelling


def test_the_users_git_configuration_cannot_turn_on_the_ext_transport(tmp_path, git_cache, monkeypatch):
    from retrieval.ingest import git as gitlib

    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[protocol "ext"]\n\tallow = always\n')
    marker = tmp_path / "helper-ran"
    helper = tmp_path / "helper.sh"
    helper.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    helper.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    with pytest.raises(gitlib.GitError):
        gitlib.fetch(gitlib.GitSource(f"ext::{helper}"), git_cache)
    assert not marker.exists(), "git ran an ext:: helper because ~/.gitconfig allowed it"


def test_deleting_a_git_corpus_removes_its_cache_once_no_corpus_uses_it(repo, git_cache, index_root, writer_client):
    assert build_cmd("--corpus", "first", "--git", repo.url, "--subdir", "docs")[0] == 0
    assert build_cmd("--corpus", "second", "--git", repo.url, "--subdir", "docs")[0] == 0
    caches = list(git_cache.glob("*.git"))
    assert len(caches) == 1
    assert writer_client.delete("/api/v1/corpora/first").status_code == 204
    assert caches[0].is_dir(), "the other corpus still builds from this repository"
    assert writer_client.delete("/api/v1/corpora/second").status_code == 204
    assert not list(git_cache.glob("*.git"))


def test_the_deploy_key_comes_from_the_settings_not_from_the_environment(settings, monkeypatch):
    from corpus.gitsource import git_source
    from retrieval.ingest.git import _env

    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.setenv("DOCSMCP_GIT_SSH_KEY", "/from/the/environment")
    settings.DOCSMCP_GIT_SSH_KEY = "/etc/docsmcp/deploy key"
    source = git_source(Corpus(name="keyed", git_url="ssh://git.example/docs.git"))
    assert _env(ssh_key=source.ssh_key)["GIT_SSH_COMMAND"] == (
        "ssh -i '/etc/docsmcp/deploy key' -o IdentitiesOnly=yes -o BatchMode=yes")
    assert _env()["GIT_SSH_COMMAND"] == "ssh -o BatchMode=yes"
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -F /etc/docsmcp/ssh_config")  # the operator's own command wins
    assert _env(ssh_key=source.ssh_key)["GIT_SSH_COMMAND"] == "ssh -F /etc/docsmcp/ssh_config"
