"""Every 5xx is logged with its traceback and the request's ID, whatever DEBUG is (docsmcp_site/request_log.py)."""

from __future__ import annotations

import io
import logging

import pytest
from django.test import Client


@pytest.fixture
def log_output():
    """What the handlers the site configures for `django.request` write (the console handler: stderr)."""
    buffer = io.StringIO()
    logger, swapped = logging.getLogger("django.request"), []
    while logger is not None:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler):
                swapped.append((handler, handler.setStream(buffer)))
        logger = logger.parent if logger.propagate else None
    yield buffer
    for handler, stream in swapped:
        handler.setStream(stream)


def _crash(*args, **kwargs):
    raise RuntimeError("the resource metadata crashed")


@pytest.mark.django_db
def test_a_server_error_is_logged_with_its_traceback_and_request_id_with_debug_off(settings, monkeypatch, log_output):
    from docsmcp_site.signin import ResourceMetadataView

    settings.DEBUG = False
    monkeypatch.setattr(ResourceMetadataView, "get_authorization_servers", _crash)
    response = Client(raise_request_exception=False).get("/.well-known/oauth-protected-resource")
    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    logged = log_output.getvalue()
    assert "Internal Server Error: /.well-known/oauth-protected-resource" in logged
    assert "Traceback" in logged and "RuntimeError: the resource metadata crashed" in logged
    assert f"[request {request_id}]" in logged


@pytest.mark.django_db
def test_an_mcp_internal_error_names_the_request_in_its_log_lines(settings, monkeypatch, log_output):
    import mcp_endpoint.transport as transport

    settings.DEBUG = False
    monkeypatch.setattr(transport, "_serve", _crash)
    response = Client().post("/mcp/", "{}", content_type="application/json", HTTP_X_REQUEST_ID="proxy-given-1234")
    assert response.status_code == 500 and response["X-Request-ID"] == "proxy-given-1234"
    logged = log_output.getvalue()
    assert "MCP request failed [request proxy-given-1234]" in logged and "RuntimeError" in logged
    assert "Internal Server Error: /mcp/ [request proxy-given-1234]" in logged


@pytest.mark.django_db
def test_a_client_error_is_not_logged_as_one(settings, log_output):
    settings.DEBUG = False
    response = Client().get("/no/such/page/")
    assert response.status_code == 404 and response["X-Request-ID"]
    assert log_output.getvalue() == ""
