"""Django's PostgreSQL backend with a cheaper flush, for the test suite (tests/settings.py).

A transactional test ends with a flush of every table. PostgreSQL's TRUNCATE gives each table new files and
costs about half a second for the site's tables, while deleting the few rows a test leaves takes tens of
milliseconds. The foreign keys Django makes are deferred, so the deletes need no order; a flush that resets
sequences or cascades stays a TRUNCATE.
"""

from __future__ import annotations

from django.db.backends.postgresql import base, operations

from tests.postgresql.creation import DatabaseCreation


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
    creation_class = DatabaseCreation
