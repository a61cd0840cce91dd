"""The store's own defences: an integrity check, and what a SQLite failure means in one line.

`PRAGMA quick_check` reads every page and index of the database (without comparing each index's
content to its table, which `integrity_check` would do at several times the cost): a damaged page
or index shows up here instead of as alerts that silently stop. `runscribe run` and `poll` run it
at start (a failure is one line and exit 2) and the bot once a day (a failure is an operator
alert in every alerts channel and a `/healthz` problem).

`describe_sqlite_error` turns the errors a user must act on into a sentence: a database locked by
another process (after waiting `busy_timeout`), a full disk, a damaged file.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from bot.store.db import Database, StoreError

SQLITE_FULL = 13
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
LOW_SPACE = 1 << 20  # bytes: less than this free on the database's disk is a full disk
BUSY_SECONDS = 10  # the connections' busy_timeout (`bot.store.db`)


def disk_full(path: str | Path) -> bool:
    try:
        folder = Path(path).resolve().parent
        return shutil.disk_usage(folder).free < LOW_SPACE
    except OSError:
        return False


def describe_sqlite_error(exc: BaseException, path: str | Path) -> str | None:
    """One line for a SQLite failure a person must act on, or None for any other error."""
    for cause in _chain(exc):
        said = _describe(cause, path)
        if said is not None:
            return said
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(found) < 10:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


def _describe(exc: BaseException, path: str | Path) -> str | None:
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if (
        primary == SQLITE_FULL
        or "disk is full" in lowered
        or ("disk i/o error" in lowered and disk_full(path))
    ):
        return f"disk full: cannot write the database {path} (free space on its disk)"
    if primary in (SQLITE_BUSY, SQLITE_LOCKED) or "database is locked" in lowered:
        return (
            f"the database {path} is locked by another process (waited {BUSY_SECONDS} s); "
            "try again once it has finished"
        )
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in lowered:
        return (
            f"the database {path} is damaged ({text}); restore it from a backup, or salvage it "
            f"with `sqlite3 {path} .recover`"
        )
    return None


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
            f"the database {db.path} is damaged: {found[0][:200]}{more}; restore it from a "
            f"backup, or salvage it with `sqlite3 {db.path} .recover`"
        )
