"""Every suite belongs to a corpus, the row users name (suite names become unique per corpus in 0005).

A suite written for no corpus goes to the corpus its latest run measured, else the default corpus, else
the oldest corpus; a suite written for a version (`<corpus>@<version>`) goes to the corpus it is a version
of. Cases and runs stay as they are. Names were unique across corpora until now, so no two suites collide."""

from django.conf import settings
from django.db import migrations


def _family(corpus):
    return corpus.version_of if corpus.version_of_id else corpus


def _fallback(Corpus):
    name = getattr(settings, "DOCSMCP_DEFAULT_CORPUS", "") or ""
    heads = Corpus.objects.filter(version_of__isnull=True)
    return ((heads.filter(name=name).first() if name else None)
            or heads.filter(kind="markdown").order_by("created_at", "pk").first()
            or heads.order_by("created_at", "pk").first())


def assign(apps, schema_editor):
    Corpus = apps.get_model("corpus", "Corpus")
    EvalSuite = apps.get_model("evals", "EvalSuite")
    EvalRun = apps.get_model("evals", "EvalRun")
    fallback = None
    for suite in EvalSuite.objects.select_related("corpus", "corpus__version_of").order_by("pk"):
        if suite.corpus_id is not None:
            family = _family(suite.corpus)
        else:
            latest = (EvalRun.objects.filter(suite_id=suite.pk).select_related("corpus", "corpus__version_of")
                      .order_by("-created_at", "-pk").first())
            family = _family(latest.corpus) if latest else (fallback or _fallback(Corpus))
            fallback = fallback or (None if latest else family)
            if family is None:
                raise RuntimeError(
                    f"eval suite {suite.name!r} belongs to no corpus and there is no corpus to give it to: register "
                    "a corpus first (the admin, or POST /api/v1/corpora), or delete the suite, then migrate again")
        if family.pk != suite.corpus_id:
            EvalSuite.objects.filter(pk=suite.pk).update(corpus_id=family.pk)


class Migration(migrations.Migration):

    dependencies = [
        ("corpus", "0009_spent_authorization_code"),
        ("evals", "0003_case_answerable_coverage"),
    ]

    operations = [migrations.RunPython(assign, migrations.RunPython.noop)]
