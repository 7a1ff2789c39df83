"""Index locations: a local path or an object-store URI, and the options that reach the store.

Credentials and endpoints come from the environment only, never from the database or the
repository: `DOCSMCP_STORAGE_OPTIONS` (a JSON object of LanceDB/Lance storage options, e.g.
`{"endpoint": "http://127.0.0.1:9000", "allow_http": "true", "region": "us-east-1"}`) and the
usual `AWS_*` variables, which fill what the JSON leaves out. The program's settings read them and
hand them over once (`configure`); the engine reads no environment itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from retrieval.errors import IndexUnavailable

Location = str | Path

# AWS_* variable -> LanceDB storage option
_AWS_ENV = {
    "AWS_ENDPOINT_URL": "endpoint", "AWS_ENDPOINT_URL_S3": "endpoint", "AWS_REGION": "region",
    "AWS_DEFAULT_REGION": "region", "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key", "AWS_SESSION_TOKEN": "aws_session_token",
    "AWS_ALLOW_HTTP": "allow_http",
}


def is_remote(location: Location) -> bool:
    return "://" in str(location)


def as_location(value: Location) -> Location:
    """A setting's value as a location: `Path` would fold `s3://b/p` into `s3:/b/p`."""
    return str(value).rstrip("/") if is_remote(value) else Path(value)


def join(root: Location, *parts: str) -> Location:
    if is_remote(root):
        return "/".join([str(root).rstrip("/"), *(p.strip("/") for p in parts)])
    return Path(root).joinpath(*parts)


def name_of(location: Location) -> str:
    return str(location).rstrip("/").rsplit("/", 1)[-1] if is_remote(location) else Path(location).name


_configured: dict[str, str] = {}


def configure(environ: Mapping[str, str]) -> None:
    """The store's variables as the program's settings read them (DOCSMCP_STORAGE_OPTIONS, AWS_*).
    Kept as given and parsed at each use, so a malformed value fails the call that needs the store."""
    global _configured
    _configured = {k: v for k, v in environ.items() if k == "DOCSMCP_STORAGE_OPTIONS" or k in _AWS_ENV}


def storage_options(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Storage options for LanceDB, from DOCSMCP_STORAGE_OPTIONS over the AWS_* variables (those
    given to `configure`, unless `environ` is given)."""
    env = _configured if environ is None else environ
    options: dict[str, str] = {}
    for variable, option in _AWS_ENV.items():
        if env.get(variable) and option not in options:
            options[option] = env[variable]
    raw = env.get("DOCSMCP_STORAGE_OPTIONS", "").strip()
    if raw:
        try:
            given = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise IndexUnavailable(f"DOCSMCP_STORAGE_OPTIONS is not valid JSON ({exc}); give an object such as "
                                   '{"endpoint": "http://127.0.0.1:9000", "allow_http": "true"}') from exc
        if not isinstance(given, dict):
            raise IndexUnavailable("DOCSMCP_STORAGE_OPTIONS must be a JSON object of option names to values")
        options.update({str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in given.items()})
    return options


def load_engine() -> None:
    """Imports Lance (and with it Arrow) ahead of the first dataset opened: a serving worker that pins no
    corpus calls it while it starts, so that its first search does not pay for it. Not LanceDB: serving
    reads every table through Lance's datasets (`dataset`); only builds write through LanceDB (`connect`)."""
    import lance.query  # noqa: F401


def connect(location: Location, **kwargs):
    """A LanceDB connection to a local directory or an object-store prefix: what builds write through."""
    import lancedb  # here, so reading a setting never pays for LanceDB

    if is_remote(location):
        return lancedb.connect(str(location), storage_options=storage_options(), **kwargs)
    return lancedb.connect(location, **kwargs)


def dataset(location: Location):
    """A Lance dataset (one table's directory) on a local path or an object-store prefix: how a serving
    process reads a build's tables, by filter, by row ID and by full text, without LanceDB, whose own
    Rust library and Python modules would cost each worker about 70 MiB (docs/BENCHMARKS.md)."""
    import lance

    if is_remote(location):
        return lance.dataset(str(location), storage_options=storage_options())
    return lance.dataset(str(location))
