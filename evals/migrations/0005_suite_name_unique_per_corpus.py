import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("corpus", "0009_spent_authorization_code"),
        ("evals", "0004_suites_belong_to_a_corpus"),
    ]

    operations = [
        migrations.AlterModelOptions(name="evalsuite", options={"ordering": ["name", "corpus_id"]}),
        migrations.AlterField(
            model_name="evalsuite",
            name="name",
            field=models.SlugField(help_text="Unique within the corpus.", max_length=100),
        ),
        migrations.AlterField(
            model_name="evalsuite",
            name="corpus",
            field=models.ForeignKey(help_text="The corpus the suite belongs to; its runs measure this corpus or a "
                                              "version of it.",
                                    on_delete=django.db.models.deletion.CASCADE, related_name="eval_suites",
                                    to="corpus.corpus"),
        ),
        migrations.AddConstraint(
            model_name="evalsuite",
            constraint=models.UniqueConstraint(fields=("corpus", "name"), name="unique_eval_suite_name_per_corpus"),
        ),
    ]
