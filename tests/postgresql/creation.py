"""Test databases copied from a migrated template kept on the server between runs.

Migrating a fresh test database cost each xdist worker about 4 s on every run. The first worker to need it
migrates a template named after the migrations' source (every installed app's migration files and Django's
version) and each test database is a copy of it; Django's `migrate` still runs on the copy and finds
nothing to apply. A change to any migration names a new template, built the same way, and templates of
other migrations are dropped once nobody is copying them.
"""

from __future__ import annotations

import hashlib
import zlib
from importlib import import_module
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.db import DatabaseError
from django.db.backends.postgresql import creation


def migrations_key() -> str:
    """What the migrated schema depends on: the migration files of every installed app."""
    digest = hashlib.sha256(django.get_version().encode())
    for app in apps.get_app_configs():
        try:
            module = import_module(f"{app.name}.migrations")
        except ModuleNotFoundError:
            digest.update(f"{app.label}: no migrations, {len(list(app.get_models()))} models\n".encode())
            continue
        for path in sorted(Path(next(iter(module.__path__))).glob("*.py")):
            digest.update(f"{app.label}/{path.name}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _lock(name: str) -> int:
    """A server-wide advisory lock per template: held shared while it is copied, exclusive to build or drop it."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


class DatabaseCreation(creation.DatabaseCreation):
    def create_test_db(self, verbosity=1, autoclobber=False, serialize=True, keepdb=False):
        test = self.connection.settings_dict["TEST"]
        if keepdb or test.get("TEMPLATE"):
            return super().create_test_db(verbosity, autoclobber, serialize, keepdb)
        prefix = f"{self.connection.settings_dict['NAME']}_migrated_"
        template = prefix + migrations_key()
        with self._nodb_cursor() as cursor:
            while True:
                cursor.execute("SELECT pg_advisory_lock_shared(%s)", [_lock(template)])
                if self._database_exists(cursor, template):
                    break
                cursor.execute("SELECT pg_advisory_unlock_shared(%s)", [_lock(template)])
                cursor.execute("SELECT pg_advisory_lock(%s)", [_lock(template)])
                try:
                    if not self._database_exists(cursor, template):
                        self._build_template(template, verbosity)
                        self._drop_others(cursor, prefix, template)
                finally:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock(template)])
            test["TEMPLATE"] = template
            try:
                return super().create_test_db(verbosity, autoclobber, serialize, keepdb)
            finally:
                test["TEMPLATE"] = None
                cursor.execute("SELECT pg_advisory_unlock_shared(%s)", [_lock(template)])

    def _build_template(self, name: str, verbosity: int) -> None:
        """Migrate under a temporary name and rename when done, so an interrupted build is never copied."""
        settings_dict, test = self.connection.settings_dict, self.connection.settings_dict["TEST"]
        original = (settings.DATABASES[self.connection.alias]["NAME"], settings_dict["NAME"], test["NAME"])
        partial = f"{name}_partial"
        test["NAME"] = partial
        try:
            super().create_test_db(verbosity, autoclobber=True, serialize=False, keepdb=False)
        finally:
            self.connection.close()
            settings.DATABASES[self.connection.alias]["NAME"], settings_dict["NAME"], test["NAME"] = original
        with self._nodb_cursor() as cursor:
            cursor.execute(f"ALTER DATABASE {self._quote_name(partial)} RENAME TO {self._quote_name(name)}")

    def _drop_others(self, cursor, prefix: str, keep: str) -> None:
        """Templates of other migrations, each unless a run of those migrations is copying it right now."""
        cursor.execute("SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE %s AND datname <> %s "
                       "AND datname NOT LIKE %s", [prefix.replace("_", r"\_") + "%", keep, r"%\_partial"])
        for (stale,) in cursor.fetchall():
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_lock(stale)])
            if not cursor.fetchone()[0]:
                continue
            try:
                cursor.execute(f"DROP DATABASE IF EXISTS {self._quote_name(stale)}")
            except DatabaseError:
                pass  # connected to by someone: it goes next time
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock(stale)])
