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
window), which any web page could otherwise drive in a loop.

An attempt is counted before it is made (`reserve`, one step with the check) and given back (`release`) if
it turns out not to count: a login or a client secret that was right, a registration that was not made. A
count taken first and a failure recorded after the check let a burst of simultaneous attempts all pass one
count; attempts under way count instead, so no more than the limit are ever checked at once.
"""

from __future__ import annotations

import hashlib
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


def _lock_id(kind: str, key: str) -> int:
    digest = hashlib.blake2b(f"docsmcp-throttle:{kind}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _serialize(kind: str, keys: list[str]) -> None:
    """Hold every other reservation for any of `keys` until this transaction ends: the count and the row that
    makes it one more are a single step, so concurrent attempts cannot all pass a count taken before any was
    recorded. PostgreSQL: transaction-level advisory locks, taken in one order so that two reservations
    sharing two keys cannot wait on each other; SQLite: nothing more, its transactions begin IMMEDIATE
    (settings/core.py), holding the database's write lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for lock in sorted({_lock_id(kind, key) for key in keys}):
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock])


def reserve(address: str, kind: str = REGISTRATION, username: str | None = None) -> tuple[int, int | None]:
    """Count an attempt from `address` (and for `username`, unless None) now, if the limits allow one: (0, the
    attempt's row id) or (seconds to wait, None). Atomic, unlike `seconds_blocked` then `record_failure`;
    give the row back with `release` when the attempt turns out not to count."""
    limit, window = _limits(kind)
    if limit <= 0:
        return 0, None
    key_username, address = _key(username or "", address)
    keys = [f"address:{address}"] + ([] if username is None else [f"username:{key_username}"])
    with transaction.atomic():
        _serialize(kind, keys)
        now = timezone.now()
        LoginFailure.objects.filter(at__lte=now - window).delete()
        wait = seconds_blocked(username, address, kind)
        if wait:
            return wait, None
        return 0, LoginFailure.objects.create(kind=kind, username=key_username, address=address, at=now).pk


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
        if username and self.cleaned_data.get("password"):  # a password will be checked: count it first
            wait, reservation = reserve(address, LOGIN, username=username)
        else:  # nothing is checked (a field is missing), so nothing is counted; a refusal still stands
            wait, reservation = seconds_blocked(username, address), None
        if wait:
            limit, window = _limits()
            raise forms.ValidationError(self.error_messages["throttled"], code="throttled", params={
                "limit": limit, "window": int(window.total_seconds() // 60), "minutes": max(1, math.ceil(wait / 60))})
        failed = False
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            failed = True  # the reservation stays: it is the failure
            raise
        finally:
            if not failed:
                release(reservation)
        if self.get_user() is not None:  # only a login that succeeded clears the account's failures
            forget_failures(username)
        return cleaned
