from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"
