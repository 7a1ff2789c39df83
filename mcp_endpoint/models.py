"""The MCP endpoint's records: failed admin logins (API keys live with corpus access, in corpus.models)."""

from django.db import models


class LoginFailure(models.Model):
    """One failed admin login, kept for DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES to throttle guessing
    (docsmcp_site/login_throttle.py). In the database, so every worker and host counts the same."""

    username = models.CharField(max_length=150, db_index=True)
    address = models.CharField(max_length=100, db_index=True)
    at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"
