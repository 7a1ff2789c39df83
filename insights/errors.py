"""Errors of the insights app; each carries its HTTP status. They are not corpus errors: a surface that
answers both (the REST API, the insights pages) names both."""


class InsightsError(Exception):
    """Base class; the message is written for the staff member who has to act on it."""

    status = 400


class GapNotFound(InsightsError):
    status = 404


class FeedbackNotFound(InsightsError):
    status = 404


class FixUnavailable(InsightsError):
    """This installation has no content fixer (corpus.fixes.content_fix_propose) yet."""

    status = 501
