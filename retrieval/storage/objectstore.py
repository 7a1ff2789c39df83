"""File operations that work the same on a local directory and on an object store.

An object store has no rename and no hard links: a single PUT is atomic, and a copy is done by
the server (CopyObject) without the bytes passing through this host.
"""

from __future__ import annotations

import os
import shutil
import uuid
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from retrieval.errors import StorageUnavailable

from .uri import Location, is_remote, storage_options

if TYPE_CHECKING:
    import pyarrow.fs as pafs


def _pafs():
    """pyarrow.fs, on first use: reading a setting or starting a command never loads Arrow."""
    import pyarrow.fs

    return pyarrow.fs


def _truthy(value: str | None) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=8)
def _s3(options_key: tuple[tuple[str, str], ...]) -> pafs.S3FileSystem:
    options = dict(options_key)
    endpoint = options.get("endpoint") or options.get("aws_endpoint")
    kwargs = {}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or ("http" if _truthy(options.get("allow_http")) else "https")
    if options.get("aws_access_key_id"):
        kwargs["access_key"] = options["aws_access_key_id"]
        kwargs["secret_key"] = options.get("aws_secret_access_key", "")
        if options.get("aws_session_token"):
            kwargs["session_token"] = options["aws_session_token"]
    region = options.get("region") or options.get("aws_region")
    if region:
        kwargs["region"] = region
    return _pafs().S3FileSystem(**kwargs)


def _fs(location: Location) -> tuple[pafs.FileSystem, str]:
    if is_remote(location):
        parsed = urlparse(str(location))
        if parsed.scheme not in ("s3", "s3a"):
            raise ValueError(f"unsupported index location {location}: only local paths and s3:// URIs are")
        fs = _s3(tuple(sorted(storage_options().items())))
        return fs, f"{parsed.netloc}{parsed.path}".rstrip("/")
    return _pafs().LocalFileSystem(), str(Path(location).absolute())


def exists(location: Location) -> bool:
    fs, path = _fs(location)
    return fs.get_file_info(path).type != _pafs().FileType.NotFound


def require_bucket(location: Location) -> None:
    """Raises StorageUnavailable when `location` is in an object-store bucket that does not exist, so a
    build stops before chunking rather than when it first writes. A store that refuses the question
    (no permission to look at the bucket itself) is left for the writes to answer."""
    if not is_remote(location):
        return
    fs, path = _fs(location)
    bucket = path.split("/", 1)[0]
    try:
        missing = fs.get_file_info(bucket).type == _pafs().FileType.NotFound
    except OSError:
        return
    if missing:
        raise StorageUnavailable(f"the bucket {bucket!r} does not exist, so nothing can be written to {location}; "
                                 f"create it first (e.g. `aws s3 mb s3://{bucket}`), then build again")


def read_bytes(location: Location) -> bytes:
    """The file's bytes; FileNotFoundError when there is none."""
    if not is_remote(location):
        return Path(location).read_bytes()
    fs, path = _fs(location)
    try:
        with fs.open_input_stream(path) as stream:
            return stream.read()
    except OSError as exc:
        if fs.get_file_info(path).type == _pafs().FileType.NotFound:
            raise FileNotFoundError(str(location)) from exc
        raise


def write_bytes(location: Location, data: bytes) -> None:
    """Writes the whole file atomically: a reader sees the old content or the new, never a part."""
    if not is_remote(location):
        target = Path(location)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            with temp.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return
    fs, path = _fs(location)
    with fs.open_output_stream(path) as stream:  # one PUT: visible whole or not at all
        stream.write(data)


def delete_file(location: Location) -> None:
    fs, path = _fs(location)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass
    except OSError:
        if fs.get_file_info(path).type != _pafs().FileType.NotFound:
            raise


def delete_tree(location: Location) -> None:
    """Removes a directory (a prefix) and everything under it; nothing there is not an error."""
    if not is_remote(location):
        shutil.rmtree(location, ignore_errors=True)
        return
    fs, path = _fs(location)
    if fs.get_file_info(path).type == _pafs().FileType.NotFound:
        return
    fs.delete_dir(path)


def list_children(location: Location) -> list[str]:
    """Names directly under a directory (prefix), sorted; none when it does not exist."""
    fs, path = _fs(location)
    if fs.get_file_info(path).type == _pafs().FileType.NotFound:
        return []
    infos = fs.get_file_info(_pafs().FileSelector(path, recursive=False, allow_not_found=True))
    return sorted(info.base_name for info in infos)


def list_tree(location: Location) -> dict[str, int]:
    """Every file under a directory (prefix): relative path -> size in bytes."""
    fs, path = _fs(location)
    infos = fs.get_file_info(_pafs().FileSelector(path, recursive=True, allow_not_found=True))
    prefix = path.rstrip("/") + "/"
    return {info.path[len(prefix):]: info.size for info in infos
            if info.type == _pafs().FileType.File and info.path.startswith(prefix)}


def copy_tree(source: Location, target: Location) -> int:
    """Copies a directory (prefix); on an object store each object is copied by the server.

    Returns the number of files copied."""
    fs, src = _fs(source)
    tfs, dst = _fs(target)
    files = list_tree(source)
    for relpath in files:
        if not is_remote(target):
            Path(dst, relpath).parent.mkdir(parents=True, exist_ok=True)
        if is_remote(source) == is_remote(target):
            fs.copy_file(f"{src}/{relpath}", f"{dst}/{relpath}")
        else:
            _pafs().copy_files(f"{src}/{relpath}", f"{dst}/{relpath}", source_filesystem=fs, destination_filesystem=tfs)
    return len(files)


def download_file(source: Location, target: Path) -> None:
    fs, src = _fs(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    _pafs().copy_files(src, str(target), source_filesystem=fs, destination_filesystem=_pafs().LocalFileSystem())
