from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from celery.signals import task_postrun

        task_postrun.connect(_after_build, weak=False, dispatch_uid="docsmcp-build-followup")


def _after_build(sender=None, args=None, **kwargs) -> None:
    """A push that arrived while a build ran gets its own build once that one is done (corpus.webhooks)."""
    if getattr(sender, "name", "") != "corpus.run_build" or not args:
        return
    from corpus.models import BuildRun
    from corpus.webhooks import build_followup

    build = BuildRun.objects.filter(pk=args[0]).first()
    if build is not None:
        build_followup(build)
