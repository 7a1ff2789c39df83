"""Errors of the corpus app; each surface (admin, CLI, REST, MCP) maps them to its own shape.

They are not engine errors: `except RetrievalError` means "the engine failed", never "the app refused".
A place that answers both names both. Each class carries its HTTP `status` (the REST and llms.txt
answer); the MCP surface's table is mcp_endpoint/errors.py."""


class CorpusError(Exception):
    """Base class; the message is written for the person or agent who has to act on it."""

    status = 400


class CorpusNotFound(CorpusError):
    status = 404


class UnknownVersion(CorpusNotFound):
    """The corpus exists but not in the version asked for; the message lists the versions it has."""

    status = 404


class ProjectNotFound(CorpusNotFound):
    """A citeloom project (a chunk-store corpus) that does not exist; `available` lists those that do."""

    status = 404

    def __init__(self, project_id: str, available: list[str]):
        super().__init__(f"Project '{project_id}' not found. Available projects: {available!r}")
        self.project_id = project_id
        self.available = available


class ProjectEmbeddingMismatch(CorpusError):
    """A write or query in another vector space than the citeloom project's; `details` says which. The
    corpus's counterpart of the engine's EmbeddingMismatch, with the same status."""

    status = 409

    def __init__(self, message: str, details: dict):
        super().__init__(message)
        self.details = details


class CorpusNotAllowed(CorpusError):
    """The caller's API key is limited to other corpora."""

    status = 403


class CorpusExists(CorpusError):
    status = 409


class NoActiveBuild(CorpusError):
    status = 409  # the corpus's state, not the server's: build it first


class DatabaseUnavailable(CorpusError):
    """The database cannot be reached and nothing cached can stand in for what was asked."""

    status = 503


class BuildInProgress(CorpusError):
    status = 409


class BuildNotFound(CorpusError):
    status = 404


class BuildStateConflict(CorpusError):
    """The build exists but its status does not allow the action (activate, cancel)."""

    status = 409


class SourceDirNotAllowed(CorpusError):
    status = 400


class FixError(CorpusError):
    """A fix proposal cannot be scanned, approved or rejected as asked."""

    status = 400


class UnsafeFixTarget(FixError):
    """The proposal's target would be written outside the corpus root or through a link."""

    status = 403


class FixNotFound(CorpusError):
    status = 404


class EmbeddingChangeRefused(CorpusError):
    """The build would drop or replace the active build's vectors and the caller did not confirm it."""

    status = 409


class TaskQueueUnavailable(CorpusError):
    """The Celery broker cannot take the task: nothing was started."""

    status = 503


class SignatureInvalid(CorpusError):
    """A push webhook whose signature or secret does not match the corpus's."""

    status = 401
