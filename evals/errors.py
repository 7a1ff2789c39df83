"""Errors of the evals app; each surface (admin, CLI, REST, task) maps them to its own shape."""


class EvalError(Exception):
    status = 400


class SuiteNotFound(EvalError):
    status = 404


class RunNotFound(EvalError):
    status = 404


class RunStateConflict(EvalError):
    """The run exists but its status does not allow the action (e.g. a baseline that never completed)."""

    status = 409
