"""REST routers of the corpus app, mounted at /api/v1/ by `docsmcp_site.api.assembly`.

`corpora` (corpora and their builds), `search` (search and chunk reads), `fixes` (fix review)
and their shared `schemas`. A router parses input, calls one service or selector, shapes output.
"""
