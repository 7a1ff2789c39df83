"""Errors of the insights app. They are corpus errors (each carries its HTTP status), so every surface
that already renders those (the REST API, the admin) renders these too."""

from corpus.errors import CorpusError


class InsightsError(CorpusError):
    status = 400


class GapNotFound(InsightsError):
    status = 404


class FeedbackNotFound(InsightsError):
    status = 404


class FixUnavailable(InsightsError):
    """This installation has no content fixer (corpus.fixes.content_fix_propose) yet."""

    status = 501
