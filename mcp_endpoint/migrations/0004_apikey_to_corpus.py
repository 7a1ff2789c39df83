from django.db import migrations


def _relabel(apps, old: str, new: str) -> None:
    """Keep the admin's permissions and history of API keys: the same content type row, relabelled.
    A row already made for the new label (created after a migration back and forth) holds only
    default permissions and gives way."""
    content_types = apps.get_model("contenttypes", "ContentType")
    kept = content_types.objects.filter(app_label=old, model="apikey")
    if kept.exists():
        content_types.objects.filter(app_label=new, model="apikey").delete()
        kept.update(app_label=new)


def rename_content_type(apps, schema_editor):
    _relabel(apps, "mcp_endpoint", "corpus")


def restore_content_type(apps, schema_editor):
    _relabel(apps, "corpus", "mcp_endpoint")


class Migration(migrations.Migration):
    """API keys live with corpus access now: the model leaves this app's state; its table and rows
    stay where they are (corpus.ApiKey names the same db_table)."""

    dependencies = [
        ("mcp_endpoint", "0003_login_failures"),
        ("corpus", "0007_apikey_from_mcp_endpoint"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiKey")],
            database_operations=[migrations.RunPython(rename_content_type, restore_content_type)],
        ),
    ]
