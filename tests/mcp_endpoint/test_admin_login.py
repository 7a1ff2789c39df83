"""Admin login throttling: repeated failed logins for one account, or from one address, are refused
for a while with a message saying so, whatever password comes next."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from mcp_endpoint.models import LoginFailure

LOGIN = "/admin/login/?next=/admin/"
PASSWORD = "correct horse battery staple"


@pytest.fixture
def staff(django_user_model):
    django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)
    django_user_model.objects.create_user("bob", password=PASSWORD, is_staff=True)


def login(username: str, password: str, address: str = "10.0.0.1") -> tuple[bool, str]:
    """(logged in, the page's text) for one attempt from `address`."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(LOGIN, {"username": username, "password": password, "next": "/admin/"})
    return "_auth_user_id" in client.session, response.content.decode()


def test_the_eleventh_attempt_is_refused_even_with_the_right_password(staff):
    for attempt in range(10):
        assert login("alice", f"guess-{attempt}", address=f"10.0.1.{attempt}")[0] is False
    ok, page = login("alice", PASSWORD, address="10.0.2.1")
    assert ok is False
    assert "Too many failed logins for this account or from this address (10 in 15 minutes). Try again in 15 " \
           "minute(s)" in page


def test_one_address_trying_many_accounts_is_refused_but_others_are_not(staff):
    for attempt in range(10):
        login(f"user{attempt}", "guess", address="10.0.0.9")
    ok, page = login("bob", PASSWORD, address="10.0.0.9")
    assert ok is False and "Too many failed logins" in page
    assert login("bob", PASSWORD, address="10.0.0.10")[0] is True


def test_failures_below_the_limit_do_not_stand_in_the_way_and_a_login_clears_them(staff):
    for attempt in range(9):
        login("alice", f"guess-{attempt}")
    assert login("alice", PASSWORD)[0] is True
    assert not LoginFailure.objects.filter(username="alice").exists()


def test_the_refusal_lifts_once_the_failures_are_older_than_the_window(staff, settings):
    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 3
    settings.DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES = 5
    for attempt in range(3):
        login("alice", f"guess-{attempt}")
    assert "Too many failed logins" in login("alice", PASSWORD)[1]
    LoginFailure.objects.update(at=timezone.now() - timedelta(minutes=5, seconds=1))
    assert login("alice", PASSWORD)[0] is True


def test_a_username_is_counted_whether_or_not_the_account_exists(db):
    for attempt in range(10):
        assert "Too many" not in login("nobody", f"guess-{attempt}", address=f"10.0.3.{attempt}")[1]
    assert "Too many failed logins" in login("nobody", "guess", address="10.0.4.1")[1]


def test_an_empty_password_does_not_clear_a_username_s_failures(staff, settings):
    """A post with no password checks nothing, so it is no successful login: it used to clear the username's
    failures, and alternating it with guesses made the count never reach the limit."""
    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 3
    for attempt in range(3):
        login("alice", f"guess-{attempt}")
        login("alice", "")
    assert LoginFailure.objects.filter(username="alice").count() == 3
    assert "Too many failed logins" in login("alice", PASSWORD)[1]


@pytest.mark.parametrize("page", ["/admin/login/?next=/admin/", "/accounts/login/"])
def test_concurrent_wrong_passwords_pass_no_more_than_the_limit(transactional_db, django_user_model, settings,
                                                                page):
    """16 threads released at once against a limit of 5, each with a wrong password for one account from one
    address: a count taken before any failure was recorded let every one of them have its password checked.
    An attempt is counted before its password is checked now (given back when it succeeds), so exactly the
    limit is checked and the rest are refused."""
    import collections
    import threading

    from django.db import connection

    django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True)
    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 5
    threads, start = 16, threading.Barrier(16)
    outcomes: list[str] = []

    def guess(n: int) -> None:
        try:
            start.wait(timeout=30)
            text = Client(REMOTE_ADDR="10.0.5.1").post(page, {"username": "alice", "password": f"guess-{n}"}) \
                .content.decode()
            outcomes.append("refused" if "Too many failed logins" in text else
                            "checked" if "correct username and password" in text else text)
        finally:
            connection.close()

    workers = [threading.Thread(target=guess, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert collections.Counter(outcomes) == {"checked": 5, "refused": threads - 5}, outcomes
    assert LoginFailure.objects.filter(kind=LoginFailure.LOGIN, username="alice").count() == 5
    assert login("alice", PASSWORD, address="10.0.5.2")[0] is False  # the account's count holds it everywhere
