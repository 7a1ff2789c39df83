from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from retrieval import storage

        storage.configure(settings.DOCSMCP_STORAGE_ENVIRONMENT)  # the engine reads no environment itself
        _install_key_check()


def _install_key_check() -> None:
    """The REST API's auth (common.api.auth) checks keys the corpus app's way: API keys and the
    corpora they may see are corpus access rules, which the floor under the apps cannot import."""
    from common.api import auth

    from . import access, apikeys

    auth.use_key_check(apikeys.authenticate, admit=lambda principal: access.limit_to(principal.corpora))
