"""The store's own defences: an integrity check, and what a SQLite failure means in one line.

`PRAGMA quick_check` reads every page and index of the database (without comparing each index's
content to its table, which `integrity_check` would do at several times the cost): a damaged page
or index shows up here instead of as alerts that silently stop. `runscribe run` and `poll` run it
at start (a failure is one line and exit 2, naming `runscribe repair`, `bot.store.repair`, as
the way forward) and the bot once a day (a failure is an operator
alert in every alerts channel and a `/healthz` problem).

`describe_sqlite_error` turns the errors a user must act on into a sentence: a database locked by
another process (after waiting `busy_timeout`), a full disk, a damaged file.
"""

from __future__ import annotations

import sqlite3

from bot.store.db import Database, StoreError
from bot.store.errors import describe_sqlite_error, disk_full  # noqa: F401 - re-exported


async def quick_check(db: Database) -> list[str]:
    """`PRAGMA quick_check`: [] when the database is sound, else SQLite's findings."""
    try:
        rows = await db.fetchall("PRAGMA quick_check")
    except sqlite3.DatabaseError as exc:  # so damaged that the check itself cannot run
        return [str(exc) or type(exc).__name__]
    found = [
        line.strip()
        for row in rows
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("***")  # "*** in database main ***"
    ]
    return [] if found == ["ok"] else found


async def check_integrity(db: Database) -> None:
    """Raise a one-line StoreError when `quick_check` finds damage."""
    found = await quick_check(db)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise StoreError(
            f"the database {db.path} is damaged: {found[0][:200]}{more}; run `runscribe "
            "repair` (keeps a copy, rebuilds the indexes, else copies out every readable row), "
            f"or restore it from a backup (or salvage it by hand: `sqlite3 {db.path} .recover`)"
        )
