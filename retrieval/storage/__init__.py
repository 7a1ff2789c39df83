"""Where builds and stores live: a local directory or an object store (`s3://bucket/prefix`).

Plain Python on pyarrow's filesystems and Lance's (and LanceDB's) `storage_options`; imports no other
subpackage of `retrieval`, so ingest, search, embeddings and the chunk store can all use it.

May import: `retrieval.errors`.
"""

from .objectstore import (
    copy_tree,
    delete_file,
    delete_tree,
    exists,
    list_children,
    list_tree,
    read_bytes,
    require_bucket,
    write_bytes,
)
from .uri import (
    Location,
    as_location,
    configure,
    connect,
    dataset,
    is_remote,
    join,
    load_engine,
    name_of,
    storage_options,
)

__all__ = [
    "Location", "as_location", "configure", "connect", "copy_tree", "dataset", "delete_file", "delete_tree", "exists", "is_remote", "join",
    "list_children", "list_tree", "load_engine", "name_of", "read_bytes", "require_bucket", "storage_options", "write_bytes",
]
