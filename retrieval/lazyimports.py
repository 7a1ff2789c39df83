"""Deferring what a local index never runs: LanceDB's generated REST client for remote namespaces.

`import lancedb` imports `lance_namespace`, which imports `lance_namespace_urllib3_client`, whose
package `__init__` loads every REST API class and pydantic model of the remote-namespace protocol:
more than half of `import lancedb`'s time, for a client that a local or object-store index never
uses. `defer_namespace_client` registers the package without running its `__init__`; submodules
(the request models `lance_namespace` re-exports) still import normally, and the first use of a
name from the package itself runs the real `__init__` then.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types

NAMESPACE_CLIENT = "lance_namespace_urllib3_client"
_lock = threading.RLock()


class _DeferredPackage(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        with _lock:
            if not self.__dict__.get("_docsmcp_loaded"):
                self.__dict__["_docsmcp_loaded"] = True
                self.__spec__.loader.exec_module(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def defer_namespace_client() -> None:
    """Registers the REST client package unexecuted, unless it is already imported or absent."""
    if NAMESPACE_CLIENT in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(NAMESPACE_CLIENT)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = _DeferredPackage(NAMESPACE_CLIENT)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__loader__ = spec.loader
    module.__package__ = NAMESPACE_CLIENT
    sys.modules[NAMESPACE_CLIENT] = module
