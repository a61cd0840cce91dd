"""What a SQLite failure means, in one line a person can act on: a database locked by another
process (after waiting `busy_timeout`), a full disk, a damaged file. Imported by `bot.store.db`
(opening) and `bot.store.integrity`; imports neither."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

SQLITE_FULL = 13
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
LOW_SPACE = 1 << 20  # bytes: less than this free on the database's disk is a full disk
BUSY_SECONDS = 10.0  # the connections' busy_timeout unless set (RUNSCRIBE_DB_BUSY_TIMEOUT)


def disk_full(path: str | Path) -> bool:
    try:
        folder = Path(path).resolve().parent
        return shutil.disk_usage(folder).free < LOW_SPACE
    except OSError:
        return False


def describe_sqlite_error(
    exc: BaseException, path: str | Path, busy_seconds: float = BUSY_SECONDS
) -> str | None:
    """One line for a SQLite failure a person must act on, or None for any other error
    (`busy_seconds`: the busy timeout the connection waited before it gave up on a lock)."""
    for cause in _chain(exc):
        said = _describe(cause, path, busy_seconds)
        if said is not None:
            return said
    return None


def passing(exc: BaseException) -> bool:
    """Whether the failure is one the store recovers from by itself: a full disk (space is
    freed) or a lock held by another process (it finishes). A damaged file is not."""
    for cause in _chain(exc):
        if not isinstance(cause, sqlite3.Error):
            continue
        code = getattr(cause, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        lowered = str(cause).lower()
        if primary in (SQLITE_FULL, SQLITE_BUSY, SQLITE_LOCKED) or any(
            words in lowered for words in ("disk is full", "database is locked", "disk i/o error")
        ):
            return True
    return False


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(found) < 10:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


def _describe(exc: BaseException, path: str | Path, busy_seconds: float) -> str | None:
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
            f"the database {path} is locked by another process (waited {busy_seconds:g} s); "
            "try again once it has finished"
        )
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in lowered:
        return (
            f"the database {path} is damaged ({text}); run `runscribe repair` (it keeps a copy), "
            f"or restore it from a backup (by hand: `sqlite3 {path} .recover`)"
        )
    return None
