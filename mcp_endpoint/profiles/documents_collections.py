"""How a documents-profile call names a collection (docs/contracts/documents-tools.md): a markdown corpus,
by its name or any of its aliases, `<name>@<version>` pinning a version. Results show the name the client
used; a name that is none of them is the contract's not-found message, naming the collections there are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corpus.errors import CorpusNotFound, UnknownVersion
from corpus.models import Corpus
from corpus.selectors import corpus_serving
from corpus.serving import active_index
from mcp_endpoint.profiles import ToolError
from mcp_endpoint.profiles.shared import markdown_corpora, served_corpora
from retrieval.search.index import Index


@dataclass(frozen=True)
class Collection:
    corpus: Corpus
    shown: str  # the name or alias the client used

    def label(self) -> dict[str, str]:
        out = {"collection": self.shown}
        if self.shown != self.corpus.name:
            out["collectionId"] = self.corpus.name
        return out

    @property
    def serving_name(self) -> str:
        """The name as the client wrote it (`<corpus>@<version>` pins a version), else the corpus's own."""
        return self.shown or self.corpus.name

    def index(self) -> Index:
        return active_index(self.serving_name)


def _available() -> str:
    names = [
        f"{c.name} (aliases: {', '.join(c.aliases)})" if c.aliases else c.name for c in markdown_corpora()
    ]
    return ", ".join(names) or "none (no markdown corpus is registered yet)"


def resolve_collection(name: str) -> Collection:
    """The markdown corpus called `name` (its name or an alias); a ToolError naming the others otherwise."""
    try:
        corpus = corpus_serving(name)
    except UnknownVersion as exc:
        raise ToolError(str(exc)) from None
    except CorpusNotFound:
        corpus = None
    if corpus is None or corpus.kind != Corpus.KIND_MARKDOWN:
        raise ToolError(f'Collection "{name}" not found. Available collections: {_available()}.')
    return Collection(corpus, name)


def search_targets(names: list[str] | None) -> list[Collection]:
    """The collections a search covers: those named (each corpus once), else every built one."""
    if not names:
        return [Collection(c, c.name) for c in served_corpora()]
    seen: dict[str, Collection] = {}
    for name in names:
        collection = resolve_collection(name)
        seen.setdefault(collection.corpus.name, collection)
    return list(seen.values())


def open_document(args: dict[str, Any]) -> tuple[Collection, Index]:
    """The collection and its index, when `args["document"]` is one of its documents (the documents tool contract's message otherwise)."""
    collection = resolve_collection(args["collection"])
    index = collection.index()
    if args["document"] not in index.metadata.files:
        raise ToolError(f'Document "{args["document"]}" not found in collection "{args["collection"]}".')
    return collection, index
