"""The profiles served at /mcp/<name>/, each imported here when the transport is (the URL
configuration, `manage.py check`, a serving worker's start-up): a profile module that names a hook
it lacks, or is misspelt here, fails then, not at the first call to it."""

from __future__ import annotations

import threading

from mcp_endpoint.profiles import Profile, UnknownProfile, check_profile, citeloom, docs, documents, techdoc

_registry: dict[str, Profile] = {
    "docs": docs.PROFILE,
    "documents": documents.PROFILE,
    "techdoc": techdoc.PROFILE,
    "citeloom": citeloom.PROFILE,
}
for _profile in _registry.values():
    check_profile(_profile)
_lock = threading.Lock()


def register_profile(name: str, profile: Profile) -> None:
    """Serve `profile` (a BaseProfile, a FunctionProfile, or anything with every hook) at /mcp/<name>/;
    raises TypeError for one that lacks a hook."""
    check_profile(profile)
    with _lock:
        _registry[name] = profile


def unregister_profile(name: str) -> None:
    with _lock:
        _registry.pop(name, None)


def profile_names() -> list[str]:
    return sorted(_registry)


def get_profile(name: str) -> Profile:
    """The profile registered as `name`; raises UnknownProfile if there is none."""
    try:
        return _registry[name]
    except KeyError:
        raise UnknownProfile(name) from None
