"""Settings that contradict each other are reported before anything is served (docsmcp_site/checks.py):
each rule fires on its mistake and stays quiet on the defaults and on the fixed setting, errors stop
`manage.py check` (and so `serve`), warnings show under `check --deploy`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import Error, Warning, run_checks
from django.test import override_settings

from docsmcp_site.checks import RULES, findings

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {r.id: r for r in RULES}
S3 = {"DOCSMCP_INDEX_ROOT": "s3://bucket/docs", "DATABASES": {"default": {"ENGINE": "django.db.backends.postgresql"}},
      "CELERY_BROKER_URL": "redis://broker.internal:6379/0"}


def ids(deploy: bool) -> list[str]:
    return sorted(message.id for message in findings(deploy))


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)  # the site's default; the test settings run tasks inline
def test_the_defaults_give_no_finding():
    """A fresh install (loopback, no auth, local disk) is what the checks expect: nothing to report."""
    assert ids(deploy=False) == [] and ids(deploy=True) == []


def test_every_rule_has_an_id_of_its_level_and_a_fix():
    assert len(BY_ID) == len(RULES)
    for rule in RULES:
        assert rule.id[:9] in ("docsmcp.E", "docsmcp.W") and rule.id[9:].isdigit() and len(rule.id) == 12
        assert rule.when and rule.fix


# Each case: the rule, the settings that trip it, the settings that fix it.
CASES = [
    ("docsmcp.E001", {"DOCSMCP_OAUTH_AUDIENCE": "https://docs.example.com/"},
     {"DOCSMCP_OAUTH_AUDIENCE": "https://docs.example.com/", "DOCSMCP_OAUTH_ISSUER": "https://id.example.com"}),
    ("docsmcp.E001", {"DOCSMCP_OAUTH_SCOPE_MAP": ["docs.read=read"]},
     {"DOCSMCP_OAUTH_SCOPE_MAP": ["docs.read=read"], "DOCSMCP_OAUTH_ISSUER": "https://id.example.com"}),
    ("docsmcp.E002", {"DOCSMCP_STORAGE_ENVIRONMENT": {"DOCSMCP_STORAGE_OPTIONS": "{endpoint: nope}"}},
     {"DOCSMCP_STORAGE_ENVIRONMENT": {"DOCSMCP_STORAGE_OPTIONS": '{"endpoint": "http://127.0.0.1:9000"}'}}),
    ("docsmcp.E002", {"DOCSMCP_STORAGE_ENVIRONMENT": {"DOCSMCP_STORAGE_OPTIONS": '["endpoint"]'}},
     {"DOCSMCP_STORAGE_ENVIRONMENT": {}}),
    ("docsmcp.E003", {"CITELOOM_BATCH_MIN": 600}, {"CITELOOM_BATCH_MIN": 500}),
    ("docsmcp.W001", {"MCP_SERVER_HOST": "0.0.0.0"}, {"MCP_SERVER_HOST": "0.0.0.0", "MCP_AUTH_REQUIRED": True}),
    ("docsmcp.W001", {"MCP_SERVER_HOST": "192.168.1.5"}, {"MCP_SERVER_HOST": "[::1]"}),
    ("docsmcp.W002", {"MCP_ALLOWED_ORIGINS": ["*"]}, {"MCP_ALLOWED_ORIGINS": ["*"], "MCP_AUTH_REQUIRED": True}),
    ("docsmcp.W003", {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_REGION": "us-east-1"}},
     {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "s"}}),
    ("docsmcp.W003", {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"DOCSMCP_STORAGE_OPTIONS": '{"region": "eu"}'}},
     {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"DOCSMCP_STORAGE_OPTIONS": json.dumps(
         {"aws_access_key_id": "AK", "aws_secret_access_key": "s"})}}),
    ("docsmcp.W004", {**S3, "DATABASES": {"default": {"ENGINE": "django.db.backends.sqlite3"}},
                      "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_PROFILE": "docs"}},
     {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_PROFILE": "docs"}}),
    ("docsmcp.W004", {**S3, "CELERY_BROKER_URL": "filesystem://", "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_PROFILE": "docs"}},
     {**S3, "DOCSMCP_STORAGE_ENVIRONMENT": {"AWS_PROFILE": "docs"}}),
    ("docsmcp.W005", {"MCP_SERVER_HOST": "0.0.0.0", "MCP_AUTH_REQUIRED": True, "DOCSMCP_TRUST_X_FORWARDED_PROTO": True},
     {"MCP_SERVER_HOST": "127.0.0.1", "DOCSMCP_TRUST_X_FORWARDED_PROTO": True}),
    ("docsmcp.W006", {"DOCSMCP_OAUTH_ISSUER": "http://id.example.com"},
     {"DOCSMCP_OAUTH_ISSUER": "http://127.0.0.1:9000"}),
    ("docsmcp.W006", {"DOCSMCP_OAUTH_ISSUER": "https://id.example.com", "DOCSMCP_OAUTH_JWKS_URL": "http://keys.example.com/"},
     {"DOCSMCP_OAUTH_ISSUER": "https://id.example.com", "DOCSMCP_OAUTH_JWKS_URL": "https://keys.example.com/"}),
    ("docsmcp.W007", {"DOCSMCP_OAUTH_SERVER": False, "DOCSMCP_OAUTH_REGISTRATION": True, "DOCSMCP_OAUTH_EXPLICIT": True},
     {"DOCSMCP_OAUTH_SERVER": False, "DOCSMCP_OAUTH_REGISTRATION": True, "DOCSMCP_OAUTH_EXPLICIT": False}),
    ("docsmcp.W008", {"MCP_API_KEY": "secret"}, {"MCP_API_KEY": "k" * 32}),
    ("docsmcp.W010", {"CELERY_TASK_ALWAYS_EAGER": True}, {"CELERY_TASK_ALWAYS_EAGER": False}),
    ("docsmcp.W011", {"DOCSMCP_GIT_SSH_KEY": "/nonexistent/deploy_key"}, {"DOCSMCP_GIT_SSH_KEY": __file__}),
    ("docsmcp.W009", {"DOCSMCP_EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""},
     {"DOCSMCP_EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}),
]


# The checks read the database's engine only; no query runs while it is overridden.
@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
@pytest.mark.parametrize(("check_id", "mistake", "fixed"), CASES, ids=[f"{c[0]}-{n}" for n, c in enumerate(CASES)])
def test_each_rule_reports_its_mistake_and_not_the_fix(check_id, mistake, fixed):
    deploy = check_id.startswith("docsmcp.W")
    with override_settings(**mistake):
        found = [m for m in findings(deploy) if m.id == check_id]
        assert len(found) == 1
        assert isinstance(found[0], Warning if deploy else Error) and found[0].hint == BY_ID[check_id].fix
    with override_settings(**fixed):
        assert check_id not in ids(deploy)


def test_every_rule_is_exercised_here():
    assert {case[0] for case in CASES} == set(BY_ID)


def test_errors_run_with_every_check_and_warnings_only_for_a_deployment():
    with override_settings(MCP_SERVER_HOST="0.0.0.0", CITELOOM_BATCH_MIN=600, CELERY_TASK_ALWAYS_EAGER=False):
        plain = {m.id for m in run_checks(tags=["docsmcp"])}
        deploy = {m.id for m in run_checks(tags=["docsmcp"], include_deployment_checks=True)}
    assert plain == {"docsmcp.E003"}
    assert deploy == {"docsmcp.E003", "docsmcp.W001"}


def _manage(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", "DOCSMCP_HOME": str(tmp_path),
                   **variables}
    environment.pop("DATABASE_URL", None)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True,
                          text=True)


@pytest.mark.slow
def test_manage_py_check_stops_on_an_error_and_deploy_names_the_warning(tmp_path):
    """What an operator runs: an audience without its issuer fails `check` naming both; a public address
    without auth is reported by `check --deploy`; the defaults pass `check`."""
    assert _manage(tmp_path, "check").returncode == 0
    refused = _manage(tmp_path, "check", DOCSMCP_OAUTH_AUDIENCE="https://docs.example.com/")
    assert refused.returncode != 0
    assert "docsmcp.E001" in refused.stderr and "DOCSMCP_OAUTH_ISSUER" in refused.stderr
    exposed = _manage(tmp_path, "check", "--deploy", MCP_SERVER_HOST="0.0.0.0")
    assert "docsmcp.W001" in exposed.stderr and "MCP_AUTH_REQUIRED" in exposed.stderr
