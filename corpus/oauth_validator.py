"""The built-in authorization server's checks (django-oauth-toolkit's validator), held tighter where this
server's callers rely on it: a token says the scopes it carries, and no more; an authorization code is
good for one exchange, and one presented again takes the tokens of its first exchange with it; codes are
stored as SHA-256 hashes, as tokens are (whoever reads the database cannot exchange a pending code)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from oauth2_provider.models import get_grant_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from corpus.models import SpentAuthorizationCode
from corpus.oauth import user_scopes


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def burn_code(client_id: str, code: str) -> None:
    """A failed exchange (a wrong PKCE verifier, a wrong redirect URI) ends the code: whoever holds a stolen
    code gets one guess, and the client learns to sign in again."""
    if client_id and code:
        get_grant_model().objects.filter(code=code_hash(code), application__client_id=client_id).delete()


def _revoke_spent(client_id: str, code: str) -> bool:
    """Revoke the tokens a code was first exchanged for; whether it had been exchanged."""
    spent = SpentAuthorizationCode.objects.filter(code_hash=code_hash(code), client_id=client_id,
                                                  expires__gt=timezone.now()).first()
    if spent is None:
        return False
    get_refresh_token_model().revoke_family(spent.token_family)
    return True


def _held(scopes: list[str], user: Any) -> list[str]:
    """The asked-for scopes the user may hold, in the order asked (a user always holds `read`)."""
    allowed = user_scopes(user)
    return [scope for scope in scopes if scope in allowed]


class Validator(OAuth2Validator):
    """Every lookup of a code goes through its hash: the row holds the hash, the client the code."""

    def _create_authorization_code(self, request, code, expires=None):
        # A code carries what the user holds, so its tokens and the token response say only that (the
        # scopes a client asked for beyond it were never granted; enforcement narrows them anyway).
        request.scopes = _held(list(request.scopes or []), request.user)
        return super()._create_authorization_code(request, {**code, "code": code_hash(code["code"])}, expires)

    def confirm_redirect_uri(self, client_id, code, redirect_uri, client, *args, **kwargs):
        return super().confirm_redirect_uri(client_id, code_hash(code), redirect_uri, client, *args, **kwargs)

    def get_code_challenge(self, code, request):
        return super().get_code_challenge(code_hash(code), request)

    def get_code_challenge_method(self, code, request):
        return super().get_code_challenge_method(code_hash(code), request)

    def get_authorization_code_scopes(self, client_id, code, redirect_uri, request):
        return super().get_authorization_code_scopes(client_id, code_hash(code), redirect_uri, request)

    def get_authorization_code_nonce(self, client_id, code, redirect_uri, request):
        return super().get_authorization_code_nonce(client_id, code_hash(code), redirect_uri, request)

    def _check_and_set_request_resource(self, request):
        code = getattr(request, "code", None)
        if not code:
            return super()._check_and_set_request_resource(request)
        request.code = code_hash(code)  # the library reads the grant's resource by request.code
        try:
            return super()._check_and_set_request_resource(request)
        finally:
            request.code = code

    def save_bearer_token(self, token, request, *args, **kwargs):
        # A refresh also says only what the user still holds (an account that lost staff since).
        if request.user is not None and token.get("scope"):
            token["scope"] = " ".join(_held(token["scope"].split(), request.user))
            request.scopes = token["scope"].split()
        return super().save_bearer_token(token, request, *args, **kwargs)

    def _create_refresh_token(self, request, refresh_token_code, access_token, previous_refresh_token):
        refresh_token = super()._create_refresh_token(request, refresh_token_code, access_token,
                                                      previous_refresh_token)
        request.docsmcp_token_family = refresh_token.token_family  # what a replay of the code revokes
        return refresh_token

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        if super().validate_code(client_id, code_hash(code), client, request, *args, **kwargs):
            return True
        _revoke_spent(client_id, code)  # RFC 6749 4.1.2: a code used twice revokes what it gave the first time
        return False

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        family = getattr(request, "docsmcp_token_family", None)
        deleted, _ = get_grant_model().objects.filter(code=code_hash(code), application=request.client).delete()
        if not deleted:  # exchanged at the same moment by another request: neither keeps its tokens
            get_refresh_token_model().revoke_family(family)
            _revoke_spent(client_id, code)
            raise errors.InvalidGrantError(request=request)
        now = timezone.now()
        SpentAuthorizationCode.objects.filter(expires__lte=now).delete()
        SpentAuthorizationCode.objects.create(
            code_hash=code_hash(code), client_id=client_id, token_family=family,
            expires=now + timedelta(seconds=settings.DOCSMCP_OAUTH_REFRESH_TOKEN_SECONDS))
