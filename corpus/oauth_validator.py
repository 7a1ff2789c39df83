"""The built-in authorization server's checks (django-oauth-toolkit's validator), held tighter where this
server's callers rely on it: a token says the scopes it carries, and no more."""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

from corpus.oauth import user_scopes


def _held(scopes: list[str], user: Any) -> list[str]:
    """The asked-for scopes the user may hold, in the order asked (a user always holds `read`)."""
    allowed = user_scopes(user)
    return [scope for scope in scopes if scope in allowed]


class Validator(OAuth2Validator):
    def _create_authorization_code(self, request, code, expires=None):
        # A code carries what the user holds, so its tokens and the token response say only that (the
        # scopes a client asked for beyond it were never granted; enforcement narrows them anyway).
        request.scopes = _held(list(request.scopes or []), request.user)
        return super()._create_authorization_code(request, code, expires)

    def save_bearer_token(self, token, request, *args, **kwargs):
        # A refresh also says only what the user still holds (an account that lost staff since).
        if request.user is not None and token.get("scope"):
            token["scope"] = " ".join(_held(token["scope"].split(), request.user))
            request.scopes = token["scope"].split()
        return super().save_bearer_token(token, request, *args, **kwargs)
