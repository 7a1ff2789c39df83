"""API keys for the MCP endpoint and the REST API. The key itself is never stored."""

from django.db import models

SCOPES = ("read", "write", "build", "admin")


def default_scopes() -> list[str]:
    return ["read"]


class ApiKey(models.Model):
    """One bearer key: shown once when created in the admin, kept only as its SHA-256 hash."""

    name = models.CharField(max_length=100, help_text="Who or what uses this key.")
    prefix = models.CharField(
        max_length=8, editable=False, help_text="First 8 characters, to recognise the key."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=default_scopes, help_text="Any of: read, write, build, admin.")
    corpora = models.JSONField(
        default=list, blank=True,
        help_text="Corpus names this key may read and write; empty means every corpus.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class LoginFailure(models.Model):
    """One failed admin login, kept for DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES to throttle guessing
    (docsmcp_site/login_throttle.py). In the database, so every worker and host counts the same."""

    username = models.CharField(max_length=150, db_index=True)
    address = models.CharField(max_length=100, db_index=True)
    at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"
