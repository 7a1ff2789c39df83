"""A patched build's mapped files and lexicon, carried over from the previous build, must be the ones
reading its tables whole writes (byte for byte, but compressed texts value for value: a patch keeps the
previous blocks whose chunks all stay), and hold what a full rebuild of the same sources holds (the
lexicon byte for byte; the arrays chunk for chunk, whose row order a rebuild does not keep)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from retrieval.embeddings import get_provider
from retrieval.format import mapped
from retrieval.format.lexicon import CHUNKS_FILE, PAGES_FILE, TERMS_FILE
from retrieval.format.mapped import MAPPED_DIR, open_mapped, write_mapped_from_tables
from retrieval.format.metadata import read_metadata
from retrieval.ingest import carryover
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search import texts
from retrieval.search.texts import CompressedTexts

PAYMENTS = "sdks/python/payments.md"
LEXICON_FILES = (TERMS_FILE, PAGES_FILE, CHUNKS_FILE)
TEXT_FILES = (mapped.TEXTS_FILE, mapped.VARIABLE_TEXTS_FILE, mapped.TEXT_OFFSETS_FILE, mapped.TEXT_BLOCKS_FILE)


def build(source: Path, out: Path, previous: Path | None = None):
    return build_index(BuildRequest(source, out, out.name, "skyline", provider=get_provider("hash"),
                                    previous_dir=previous, workers=1))


def mapped_files(build_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((build_dir / MAPPED_DIR).iterdir())}


def whole(build_dir: Path, tmp_path: Path) -> Path:
    """A copy of the build with the mapped files that reading its tables whole writes (what every build
    wrote before)."""
    copy = tmp_path / f"whole-{build_dir.name}"
    shutil.copytree(build_dir, copy)
    shutil.rmtree(copy / MAPPED_DIR)
    write_mapped_from_tables(copy, list(read_metadata(copy).taxonomy), get_provider("hash").dimensions,
                             lambda *_: None)
    return copy


def read_whole(build_dir: Path, tmp_path: Path) -> dict[str, bytes]:
    return mapped_files(whole(build_dir, tmp_path))


def held_texts(build_dir: Path) -> list[str]:
    """Each chunk's text by catalog position."""
    held = open_mapped(build_dir)
    if held.text_offsets is None:
        return held.texts.to_pylist()
    return CompressedTexts(held.texts, held.text_offsets, held.text_starts).get(list(range(len(held.catalog))))


def assert_read_whole(build_dir: Path, tmp_path: Path) -> None:
    """The build's mapped files are those reading its tables whole writes; compressed texts by value."""
    copy = whole(build_dir, tmp_path)
    got, want = mapped_files(build_dir), mapped_files(copy)
    assert {k: v for k, v in got.items() if k not in TEXT_FILES} == {k: v for k, v in want.items()
                                                                     if k not in TEXT_FILES}
    assert held_texts(build_dir) == held_texts(copy)


def by_chunk(build_dir: Path) -> dict[str, tuple]:
    """Each chunk's catalog row, vector codes and scale, and text, by chunk ID; and each page's links."""
    held = open_mapped(build_dir)
    catalog = held.catalog.to_pylist()
    texts = held_texts(build_dir)
    return {row["chunk_id"]: (row, held.codes[n].tobytes(), float(held.scales[n]), texts[n])
            for n, row in enumerate(catalog)}


def page_links(build_dir: Path) -> set[tuple[str, str]]:
    held = open_mapped(build_dir)
    paths = held.catalog["filepath"].chunk(0).dictionary.to_pylist()
    return {(paths[page], paths[int(target)]) for page in range(len(paths)) for target in held.links.of(page)}


def change_everything(docs: Path) -> None:
    """An edit, an addition, a rename and a deletion."""
    payments = docs / PAYMENTS
    payments.write_text(payments.read_text() + "\n## Capture later\n\nHold the zephyrcapture funds first.\n")
    (docs / "guides" / "fx.md").write_text("# FX\n\n## Rates\n\nQuotes refresh hourly; see [payouts](payouts.md).\n")
    (docs / "guides" / "sandbox.md").rename(docs / "guides" / "test-mode.md")
    (docs / "guides" / "payouts.md").unlink()


@pytest.fixture
def first(copy_sample_docs, tmp_path) -> Path:
    return build(copy_sample_docs, tmp_path / "b1").path


def assert_carried_over_as_a_full_rebuild(docs: Path, patched, tmp_path: Path) -> None:
    assert patched.stats["patched"] is True and patched.stats["mapped_carried_over"] is True
    assert_read_whole(patched.path, tmp_path)
    full = build(docs, tmp_path / f"full-{patched.path.name}")
    assert full.stats["patched"] is False
    got, want = mapped_files(patched.path), mapped_files(full.path)
    assert {name: got[name] for name in LEXICON_FILES} == {name: want[name] for name in LEXICON_FILES}
    assert by_chunk(patched.path) == by_chunk(full.path)
    assert page_links(patched.path) == page_links(full.path)


def test_patched_mapped_files_and_lexicon_equal_a_full_rebuild_after_an_edit_an_add_a_rename_and_a_delete(
        copy_sample_docs, first, tmp_path):
    change_everything(copy_sample_docs)
    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert (patched.stats["chunked_files"], patched.stats["reused_files"]) == (3, 39)
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, patched, tmp_path)
    held = open_mapped(patched.path)
    assert "guides/payouts.md" not in held.catalog["filepath"].chunk(0).dictionary.to_pylist()
    assert ("guides/fx.md", "guides/payouts.md") not in page_links(patched.path)  # its target is gone


def test_a_patch_of_a_patch_still_equals_a_full_rebuild(copy_sample_docs, first, tmp_path):
    change_everything(copy_sample_docs)
    second = build(copy_sample_docs, tmp_path / "b2", previous=first).path
    (copy_sample_docs / "guides" / "payouts.md").write_text("# Payouts\n\n## Schedule\n\nDaily, see [FX](fx.md).\n")
    (copy_sample_docs / "guides" / "fx.md").unlink()
    third = build(copy_sample_docs, tmp_path / "b3", previous=second)
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, third, tmp_path)


def test_compressed_texts_are_patched_where_a_full_build_puts_their_blocks(copy_sample_docs, tmp_path, monkeypatch):
    monkeypatch.setattr(mapped, "CONTENT_IN_MEMORY_CHARS", 1000)  # the sample corpus is compressed too
    first = build(copy_sample_docs, tmp_path / "b1").path
    assert open_mapped(first).text_offsets is not None
    change_everything(copy_sample_docs)
    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert open_mapped(patched.path).text_offsets is not None
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, patched, tmp_path)


def test_compressed_blocks_whose_chunks_all_stay_are_kept_as_they_were(copy_sample_docs, tmp_path, monkeypatch):
    """A change to the first page recompressed every block after it; now only the blocks it was in are."""
    monkeypatch.setattr(mapped, "CONTENT_IN_MEMORY_CHARS", 1000)
    monkeypatch.setattr(mapped, "BLOCK_CHUNKS", 4)
    monkeypatch.setattr(carryover, "BLOCK_CHUNKS", 4)
    monkeypatch.setattr(texts, "BLOCK_CHUNKS", 4)
    first = build(copy_sample_docs, tmp_path / "b1").path
    paths = open_mapped(first).catalog["filepath"].chunk(0).to_pylist()
    page = copy_sample_docs / paths[0]
    page.write_text(page.read_text() + "\n## Later\n\nA quokkablock paragraph.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, second, tmp_path)
    before, after = open_mapped(first), open_mapped(second.path)
    assert after.text_starts is not None and not (second.path / MAPPED_DIR / mapped.TEXTS_FILE).exists()
    kept = set(before.texts.to_pylist()) & set(after.texts.to_pylist())
    assert len(kept) >= len(before.texts) - 3  # all but the blocks the page's chunks were in
    hit = held_texts(second.path).index(next(t for t in held_texts(second.path) if "quokkablock" in t))
    assert paths[0] == after.catalog["filepath"].chunk(0).to_pylist()[hit]

    third_page = copy_sample_docs / paths[-1]  # a patch of a patched build: its blocks are not all 4 long
    third_page.write_text(third_page.read_text() + "\nA wallabyblock line.\n")
    page.unlink()
    third = build(copy_sample_docs, tmp_path / "b3", previous=second.path)
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, third, tmp_path)
    assert any("wallabyblock" in t for t in held_texts(third.path))


def test_links_of_the_pages_changed_are_resolved_and_the_others_renumbered(copy_sample_docs, first, tmp_path,
                                                                          monkeypatch):
    """The same pages as before: only the changed pages' links are resolved again."""
    resolved: list[int] = []
    real = carryover.resolve_links
    monkeypatch.setattr(carryover, "resolve_links", lambda pages, written: resolved.append(
        sum(w is not None for w in written)) or real(pages, written))
    held = open_mapped(first)
    paths = held.catalog["filepath"].chunk(0).dictionary.to_pylist()
    page = copy_sample_docs / paths[0]  # first in row order: every other page's number changes
    page.write_text(page.read_text() + "\nSee [payouts](guides/payouts.md) and [refunds](/models/refund.md).\n")
    (copy_sample_docs / PAYMENTS).write_text((copy_sample_docs / PAYMENTS).read_text()
                                             + f"\nBack to [the first page](/{paths[0]}).\n")
    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert patched.stats["chunked_files"] == 2 and resolved == [2]
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, patched, tmp_path)
    assert {(paths[0], "guides/payouts.md"), (PAYMENTS, paths[0])} <= page_links(patched.path)
    assert page_links(patched.path) - page_links(first) == {(paths[0], "guides/payouts.md"),
                                                            (paths[0], "models/refund.md"), (PAYMENTS, paths[0])}


def test_a_previous_build_without_mapped_files_is_read_whole_instead(copy_sample_docs, first, tmp_path):
    shutil.rmtree(first / MAPPED_DIR)  # as a build made before mapped files left it
    change_everything(copy_sample_docs)
    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert patched.stats["patched"] is True and patched.stats["mapped_carried_over"] is False
    assert mapped_files(patched.path) == read_whole(patched.path, tmp_path)


def test_the_patched_lexicon_drops_the_terms_only_removed_pages_held(copy_sample_docs, first, tmp_path):
    from retrieval.format.lexicon import query_terms, read_lexicon

    term = query_terms("zephyrcapture")
    payments = copy_sample_docs / PAYMENTS
    original = payments.read_text()
    payments.write_text(original + "\n## Capture later\n\nHold the zephyrcapture funds first.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first).path
    payments.write_text(original)
    third = build(copy_sample_docs, tmp_path / "b3", previous=second).path
    assert np.isin(term, read_lexicon(second / MAPPED_DIR).hashes).all()
    assert not np.isin(term, read_lexicon(third / MAPPED_DIR).hashes).any()
    assert mapped_files(third)[TERMS_FILE] == mapped_files(first)[TERMS_FILE]


def test_a_patch_that_only_removes_pages_equals_a_full_rebuild(copy_sample_docs, first, tmp_path):
    (copy_sample_docs / "guides" / "payouts.md").unlink()
    (copy_sample_docs / "models" / "refund.md").unlink()
    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert patched.stats["chunked_files"] == 0
    assert_carried_over_as_a_full_rebuild(copy_sample_docs, patched, tmp_path)
