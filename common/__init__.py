"""The floor under the apps: what every app shares and none owns.

The REST API's plumbing (`api`: one error shape, pagination and request schemas; which key holds
which scope is the corpus app's, corpus/api/auth.py), the admin's base classes (`admin_base`), the Celery app (`celery`, which
`celery -A common worker` finds), the caller every surface authenticates (`callers`) and where
an installation keeps its state (`home`).

May import: `retrieval.boot`, `retrieval.errors`. The apps build on the floor, never the other way
round: what needs an app's rules is handed in by the app (corpus installs the names challenges
give scopes in `common.callers` when Django starts; the API assembly names the apps' error classes
to `common.api.errors.install`).
"""
