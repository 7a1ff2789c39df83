"""Throttles on signing in: too many failed logins for one username, or from one address, and the login
page refuses every attempt (the right password too) until the oldest failure is older than the window.

Both counts matter: per username stops a slow guess at one account from many addresses, per
address stops one machine trying many accounts. Failures live in the database (LoginFailure), so
every worker and every web node counts them together. A username is counted whether or not the
account exists, so the refusal says nothing about which accounts there are. A successful login
clears its username's failures.

The OAuth endpoints anyone may call are held the same way, each kind counted apart: failed client
authentications at /oauth/token/ (per client ID and per address; a client secret check is a
password check), and dynamic client registrations per address (DOCSMCP_OAUTH_REGISTRATION_MAX in the
window), which any web page could otherwise drive in a loop. A registration is counted before it is made
(`reserve`, one step with the check), so concurrent registrations cannot all pass one count.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.db import connection, transaction
from django.utils import timezone

from mcp_endpoint.models import LoginFailure
from mcp_endpoint.security import client_ip

LOGIN, CLIENT, REGISTRATION = LoginFailure.LOGIN, LoginFailure.CLIENT, LoginFailure.REGISTRATION


def _limits(kind: str = LOGIN) -> tuple[int, timedelta]:
    failures = (settings.DOCSMCP_OAUTH_REGISTRATION_MAX if kind == REGISTRATION
                else settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES)
    minutes = settings.DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES
    return failures, timedelta(minutes=max(1, minutes))


def _key(username: str, address: str) -> tuple[str, str]:
    return (username or "").strip().lower()[:150], (address or "unknown")[:100]


def seconds_blocked(username: str | None, address: str, kind: str = LOGIN) -> int:
    """0 when an attempt may be made, else the seconds until one may. A None username counts the address only."""
    limit, window = _limits(kind)
    if limit <= 0:
        return 0
    key_username, address = _key(username or "", address)
    now = timezone.now()
    recent = LoginFailure.objects.filter(kind=kind, at__gt=now - window)
    counted = [recent.filter(address=address)]
    if username is not None:
        counted.append(recent.filter(username=key_username))
    wait = 0
    for failures in counted:
        if failures.count() >= limit:
            # the attempt that brings the count back under the limit: when the oldest that matters expires
            oldest = failures.order_by("-at").values_list("at", flat=True)[limit - 1]
            wait = max(wait, math.ceil((oldest + window - now).total_seconds()))
    return max(wait, 0)


def record_failure(username: str, address: str, kind: str = LOGIN) -> None:
    _limit, window = _limits(kind)
    username, address = _key(username, address)
    now = timezone.now()
    LoginFailure.objects.filter(at__lte=now - window).delete()
    LoginFailure.objects.create(kind=kind, username=username, address=address, at=now)


def _serialize(kind: str, address: str) -> None:
    """Hold every other reservation for (kind, address) until this transaction ends: the count and the row
    that makes it one more are a single step, so concurrent attempts cannot all pass a count taken before
    any was recorded. PostgreSQL: a transaction-level advisory lock; SQLite: nothing more, its transactions
    begin IMMEDIATE (settings/core.py), holding the database's write lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"docsmcp-throttle:{kind}:{address}"])


def reserve(address: str, kind: str = REGISTRATION) -> tuple[int, int | None]:
    """Count an attempt from `address` now, if the limit allows one: (0, the attempt's row id) or (seconds to
    wait, None). Atomic, unlike `seconds_blocked` then `record_failure`; give the row back with `release`
    when the attempt did not take place after all."""
    limit, window = _limits(kind)
    if limit <= 0:
        return 0, None
    _username, address = _key("", address)
    with transaction.atomic():
        _serialize(kind, address)
        now = timezone.now()
        LoginFailure.objects.filter(at__lte=now - window).delete()
        wait = seconds_blocked(None, address, kind)
        if wait:
            return wait, None
        return 0, LoginFailure.objects.create(kind=kind, username="", address=address, at=now).pk


def release(reservation: int | None) -> None:
    if reservation is not None:
        LoginFailure.objects.filter(pk=reservation).delete()


def forget_failures(username: str, kind: str = LOGIN) -> None:
    LoginFailure.objects.filter(kind=kind, username=_key(username, "")[0]).delete()


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's login form, refusing attempts while the username or the address is throttled."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "throttled": "Too many failed logins for this account or from this address (%(limit)s in "
                     "%(window)s minutes). Try again in %(minutes)s minute(s), or ask another administrator "
                     "to reset the password.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = client_ip(self.request) if self.request is not None else "unknown"
        wait = seconds_blocked(username, address)
        if wait:
            limit, window = _limits()
            raise forms.ValidationError(self.error_messages["throttled"], code="throttled", params={
                "limit": limit, "window": int(window.total_seconds() // 60), "minutes": max(1, math.ceil(wait / 60))})
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            record_failure(username, address)
            raise
        forget_failures(username)
        return cleaned
