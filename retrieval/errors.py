"""Typed engine errors, one hierarchy under `RetrievalError`. Each surface translates them once, at its
edge, from its own table (the MCP surface's mcp_endpoint/answers.py, the REST API's STATUS in
common/api/errors.py). The apps' errors (corpus, evals, insights) are their own hierarchies, never
subclasses of these. Every class lives here, so a surface's table can name each one."""

import stat


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


class UnsafeTarget(RetrievalError):
    """A target path that could write outside the corpus root, through a link, or to a non-doc file."""


class ContentFixError(RetrievalError):
    """No content fix can be made for this page and these questions; the message says why."""


class LLMFixError(RetrievalError):
    """The endpoint failed or its answer was unusable; the message says which, for the log."""


class GitError(RetrievalError):
    """git failed, timed out or was asked for something the repository does not have."""


class SkippedFile(RetrievalError):
    """A source file that is not read; the message says why, for a finding."""


FILE_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
              (stat.S_ISLNK, "a symbolic link"))


class NotRegularFile(SkippedFile):
    def __init__(self, mode: int):
        self.kind = next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")
        super().__init__(f"{self.kind}, not a regular file: skipped (only regular files are read)")


class FileTooLarge(SkippedFile):
    def __init__(self, size: int, limit: int):
        self.size, self.limit = size, limit
        super().__init__(f"file is {size:,} bytes, over the per-file limit of {limit:,} bytes: skipped")
