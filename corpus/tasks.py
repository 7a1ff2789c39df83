from celery import shared_task

from .models import BuildRun
from .services import build_execute


@shared_task(name="corpus.run_build")
def run_build(build_pk: int) -> str:
    build = BuildRun.objects.select_related("corpus").get(pk=build_pk)
    return build_execute(build=build).status
