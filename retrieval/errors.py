"""Typed engine errors. Each surface (JSON-RPC, tool result, HTTP, CLI) translates them once, at its edge."""


class RetrievalError(Exception):
    """Base class; the message is written for the person or agent who has to act on it."""


class ConfigError(RetrievalError):
    """A manifest, frontmatter or option is invalid; `line` (1-based) when the parser knows it."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class ValidationFailed(RetrievalError):
    """validate found errors, so the build refuses to run."""

    def __init__(self, message: str, findings: list | None = None):
        super().__init__(message)
        self.findings = findings or []


class EmbeddingError(RetrievalError):
    """An embedding provider failed or is misconfigured."""


class EmbeddingMismatch(RetrievalError):
    """A query or write uses a provider/model/dimension other than the index's."""


class IndexUnavailable(RetrievalError):
    """No usable index at the given location (missing, incomplete or unreadable)."""


class StorageUnavailable(RetrievalError):
    """The index root cannot take a build (an `s3://` bucket that does not exist): nothing was written."""


class IndexCorrupt(IndexUnavailable):
    """The index's files are there but do not read back (overwritten, truncated, half-copied):
    retrying cannot help, rebuilding the corpus does. `corpus` names it, when the index says."""

    def __init__(self, message: str, corpus: str = ""):
        super().__init__(message)
        self.corpus = corpus


class InvalidArgument(RetrievalError):
    """A caller-supplied argument is out of range or of the wrong kind."""


class InvalidFilter(InvalidArgument):
    """Unknown taxonomy key or value; the message lists the allowed ones."""


class InvalidCursor(InvalidArgument):
    """Forged, truncated, foreign or stale pagination cursor."""


class NotFound(RetrievalError):
    """A chunk, document or section that does not exist."""


class InvalidChunkId(InvalidArgument):
    """A chunk ID that does not match `{filepath}` or `{filepath}#{heading-path}`."""


class BuildCancelled(RetrievalError):
    """A build was cancelled or interrupted before it completed."""
