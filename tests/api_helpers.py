"""Helpers for the REST API tests: JSON calls through Django's test client, and the error shape."""

from __future__ import annotations

import json

API = "/api/v1"


def call(client, method: str, path: str, body=None, key: str | None = None, raw: bytes | str | None = None):
    """`method` `path` under /api/v1 with a JSON body (or `raw` bytes) and an optional bearer key."""
    kwargs: dict = {}
    if key is not None:
        kwargs["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    if raw is not None:
        kwargs.update(data=raw, content_type="application/json")
    elif body is not None:
        kwargs.update(data=json.dumps(body), content_type="application/json")
    elif method.upper() in {"POST", "PUT", "PATCH"}:
        kwargs.update(content_type="application/json")  # not the test client's multipart default (415)
    return getattr(client, method.lower())(f"{API}{path}", **kwargs)


def assert_error(response, status: int, code: str | None = None, message_contains: str = "") -> dict:
    """The response is `status` with the API's one error shape; returns the `error` object."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    if code is not None:
        assert error["code"] == code, error
    assert message_contains.lower() in error["message"].lower(), error["message"]
    return error
