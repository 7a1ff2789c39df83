"""Errors of the evals app, one hierarchy under `EvalError`; each carries its HTTP `status`, which the
REST API answers with (common/api/errors.py). Not corpus or engine errors: a place that answers those
too names them."""


class EvalError(Exception):
    """Base class; the message is written for the person running the evaluation."""

    status = 400


class SuiteNotFound(EvalError):
    status = 404


class RunNotFound(EvalError):
    status = 404


class RunStateConflict(EvalError):
    """The run exists but its status does not allow the action (e.g. a baseline that never completed)."""

    status = 409


class CaseFormatError(EvalError, ValueError):
    """A case file that cannot be read; the message names the file and line or case."""

    status = 400


class TargetError(EvalError):
    """A call that did not produce a tool result (transport failure, JSON-RPC error): the server under
    test failed, not the request."""

    status = 502


class ToolFailed(EvalError):
    """A tool result with isError: true; the message is the result's text."""

    status = 502
