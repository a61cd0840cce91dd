"""A database as the schema before a migration wrote it, for the migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.store.db import load_migrations


def version_of(suffix: str) -> int:
    """The number of the migration whose file name ends with `suffix`."""
    return next(m.version for m in load_migrations() if m.name.endswith(suffix))


def schema_before(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new database at `path` with every migration before `version` applied
    (and recorded, as the code that stopped there would have), holding one run, 'hero'."""
    conn = sqlite3.connect(path)
    for migration in load_migrations():
        if migration.version < version:
            conn.executescript(migration.sql)
    conn.execute(f"PRAGMA user_version = {version - 1}")
    conn.execute("INSERT INTO runs VALUES ('hero', 'Hero', '{}', '2026-09-01T00:00:00Z')")
    return conn
