import corpus.models
from django.db import migrations, models


class Migration(migrations.Migration):
    """API keys move here from mcp_endpoint (whose migration 0004 drops them from its state): the
    table mcp_endpoint_apikey and its rows are kept as they are, so no key stops working."""

    dependencies = [
        ("corpus", "0006_hook_deliveries"),
        ("mcp_endpoint", "0003_login_failures"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(help_text="Who or what uses this key.", max_length=100)),
                        ("prefix", models.CharField(editable=False, help_text="First 8 characters, to recognise the key.", max_length=8)),
                        ("key_hash", models.CharField(editable=False, max_length=64, unique=True)),
                        ("scopes", models.JSONField(default=corpus.models.default_scopes, help_text="Any of: read, write, build, admin.")),
                        ("corpora", models.JSONField(blank=True, default=list, help_text="Corpus names this key may read and write; empty means every corpus.")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("revoked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, editable=False, null=True)),
                    ],
                    options={
                        "verbose_name": "API key",
                        "verbose_name_plural": "API keys",
                        "ordering": ["-created_at"],
                        "db_table": "mcp_endpoint_apikey",
                    },
                ),
            ],
        ),
    ]
