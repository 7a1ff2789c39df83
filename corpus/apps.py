from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from retrieval import storage

        storage.configure(settings.DOCSMCP_STORAGE_ENVIRONMENT)  # the engine reads no environment itself
        _install_scope_names()
        if self.apps.is_installed("oauth2_provider"):  # not in a build (docsmcp_site/installed_apps.py)
            _forget_tokens_on_change()


# Every process sets up Django, and most serve no request: `build_index` and `validate_docs`, a Celery
# worker's build. So what is installed here loads nothing of the HTTP stack (django-ninja, pydantic) or of
# the OAuth checks (corpus.oauth, corpus.apikeys) until a request first needs it; `build_index` and
# `validate_docs` run without the OAuth server's app at all, so without its tokens to forget. API keys are
# not installed anywhere: every surface calls corpus.apikeys.authenticate (the REST API from corpus/api/auth.py).


def _install_scope_names() -> None:
    """Challenges (common.callers) name scopes as the authorization server clients sign in at knows them:
    an external issuer alone has its own names, mapped here by DOCSMCP_OAUTH_SCOPE_MAP."""
    from common import callers

    callers.use_scope_names(_scope_to_ask)


def _scope_to_ask(scope: str) -> str | None:
    from .oauth import scope_to_ask

    return scope_to_ask(scope)


def _forget_tokens_on_change() -> None:
    """A worker's cached token checks (corpus.oauth) end when the token's row goes (revoked, rotated away,
    its client deleted) or its user's account or groups change, at once in the worker that made the change."""
    from django.contrib.auth import get_user_model
    from django.db.models.signals import m2m_changed, post_delete, post_save
    from oauth2_provider.models import get_access_token_model

    def token_deleted(sender, instance, **kwargs) -> None:
        from .oauth import forget_token

        forget_token(instance.token_checksum)

    def user_changed(sender, update_fields=None, **kwargs) -> None:
        if update_fields is None or set(update_fields) != {"last_login"}:  # not each sign-in
            from .oauth import forget_cached_tokens

            forget_cached_tokens()

    post_delete.connect(token_deleted, sender=get_access_token_model(), weak=False)
    post_save.connect(user_changed, sender=get_user_model(), weak=False)
    m2m_changed.connect(user_changed, sender=get_user_model().groups.through, weak=False)
