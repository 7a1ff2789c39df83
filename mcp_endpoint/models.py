"""The MCP endpoint's records: attempts counted by the login, client-authentication and registration throttles
(API keys live with corpus access, in corpus.models)."""

from django.db import models


class LoginFailure(models.Model):
    """One attempt that counts toward a throttle, kept for DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES
    (docsmcp_site/login_throttle.py): a failed login (admin or sign-in), a failed OAuth client
    authentication at the token endpoint, or a dynamic client registration. In the database, so every
    worker and host counts the same."""

    LOGIN, CLIENT, REGISTRATION = "login", "client", "registration"
    KINDS = [(LOGIN, "failed login"), (CLIENT, "failed client authentication"),
             (REGISTRATION, "client registration")]

    kind = models.CharField(max_length=20, choices=KINDS, default=LOGIN)
    username = models.CharField(max_length=150, db_index=True)
    address = models.CharField(max_length=100, db_index=True)
    at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"


class RateCount(models.Model):
    """A caller's count in one minute's window for a limit every worker must share where no Redis is
    configured (the feedback tools' limit, mcp_endpoint/ratelimit.py `shared_hit`)."""

    identity = models.CharField(max_length=300)
    window = models.BigIntegerField()
    count = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["identity", "window"], name="ratecount_identity_window")]

    def __str__(self) -> str:
        return f"{self.identity}: {self.count} in window {self.window}"
