from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from retrieval import storage

        storage.configure(settings.DOCSMCP_STORAGE_ENVIRONMENT)  # the engine reads no environment itself
