"""`runscribe repair`: the way forward from a damaged database that is not a restore.

1. The damaged file (with its `-wal`) is copied aside first, `<db>.damaged-<UTC time>`: nothing
   is ever lost by repairing.
2. Its indexes are rebuilt (`REINDEX`, then `VACUUM` for the damaged index's old pages): a
   damaged index (what a torn write usually hits, and what `quick_check` most often finds) is
   rebuilt from its table, and no row changes.
3. When the check still fails (a table's own page is damaged), every row that can still be read
   is copied into a new database built by the migrations (tables read without their indexes;
   a damaged page's rows are skipped, counted per table), the derived tables (search, minute
   counts) are copied as they were and the search index rebuilt, and the new file takes the old
   one's place.

Run it with the bot stopped: it writes the database file itself.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bot.store.db import Database, StoreError

_BATCH = 500
_SKIP_LIMIT = 1 << 48  # the largest rowid gap looked across after a damaged page


@dataclass(slots=True)
class Repaired:
    """What `repair` did: where the damaged copy is, how it was mended, rows kept and lost."""

    backup: Path | None
    how: str  # "sound" (nothing to do) | "reindexed" | "salvaged"
    kept: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)  # rows (or row ranges) unreadable


def _findings(conn: sqlite3.Connection) -> list[str]:
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return [str(exc) or type(exc).__name__]
    found = [str(row[0]).strip() for row in rows if str(row[0]).strip()]
    return [] if found == ["ok"] else found


def _backup(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            shutil.copy2(source, f"{backup}{suffix}")
    return backup


def _reindex(path: Path) -> bool:
    """REINDEX, then VACUUM (the pages of the damaged index are left over, unused); whether the
    check passes afterwards."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("REINDEX")
        conn.execute("VACUUM")
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
    conn = sqlite3.connect(path)
    try:
        return not _findings(conn)
    finally:
        conn.close()


def _tables(conn: sqlite3.Connection) -> list[tuple[str, bool]]:
    """The new database's ordinary tables (name, has a rowid), search shadow tables left out."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY rootpage"
    ).fetchall()
    virtual = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    ]
    return [
        (name, "WITHOUT ROWID" not in (sql or "").upper())
        for name, sql in rows
        if not any(name.startswith(f"{v}_") for v in virtual)
    ]


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA {schema}.table_info("{table}")')]


def _copy(conn: sqlite3.Connection, table: str, rowid: bool) -> tuple[int, int]:
    """Copy the readable rows of old.table into main.table: (kept, lost)."""
    new = _columns(conn, "main", table)
    old = set(_columns(conn, "old", table))
    cols = ", ".join(f'"{c}"' for c in new if c in old)
    if not cols:
        return 0, 0
    insert = f'INSERT OR IGNORE INTO main."{table}" ({cols}) '
    try:
        with conn:  # a damaged page fails (and SQLite rolls back) the whole copy
            cursor = conn.execute(f'{insert}SELECT {cols} FROM old."{table}" NOT INDEXED')
        return cursor.rowcount, 0
    except sqlite3.DatabaseError:
        if not rowid:
            return 0, 1
    kept = lost = 0
    last = -(1 << 63)
    batch = _BATCH
    while True:
        try:
            rows = conn.execute(
                f'SELECT rowid, {cols} FROM old."{table}" NOT INDEXED WHERE rowid > ? '
                "ORDER BY rowid LIMIT ?",
                (last, batch),
            ).fetchall()
        except sqlite3.DatabaseError:
            if batch > 1:
                batch = 1  # row by row up to the damaged page
                continue
            lost += 1
            after = _readable_after(conn, table, last)
            if after is None:
                return kept, lost
            last, batch = after, _BATCH
            continue
        if not rows:
            return kept, lost
        marks = ", ".join("?" * (len(rows[0]) - 1))
        with conn:  # one transaction per batch, read outside it
            conn.executemany(f"{insert}VALUES ({marks})", [row[1:] for row in rows])
        kept += len(rows)
        last = rows[-1][0]


def _readable_after(conn: sqlite3.Connection, table: str, last: int) -> int | None:
    """A rowid past `last` from which a batch of the table reads again (the damaged page
    skipped), or None when nothing further can be read."""
    step = 1
    while step < _SKIP_LIMIT:
        start = max(last, 0) + step
        try:
            conn.execute(
                f'SELECT rowid FROM old."{table}" NOT INDEXED WHERE rowid > ? ORDER BY rowid '
                "LIMIT 1",
                (start,),
            ).fetchall()
            return start
        except sqlite3.DatabaseError:
            step *= 2
    return None


def _salvage(damaged: Path, fresh: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Copy what can be read of `damaged` into `fresh` (built by the migrations), table by
    table, each batch its own transaction: SQLite rolls a whole transaction back when it meets
    a damaged page, so no copy may span one."""
    conn = sqlite3.connect(fresh)  # transactions opened by `with conn`, one per batch
    kept: dict[str, int] = {}
    lost: dict[str, int] = {}
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall()
        with conn:  # derived tables are copied as they were, not derived again
            for name, _ in triggers:
                conn.execute(f'DROP TRIGGER "{name}"')
        conn.execute("ATTACH DATABASE ? AS old", (f"{damaged.resolve().as_uri()}?mode=ro",))
        old_tables = {r[0] for r in conn.execute("SELECT name FROM old.sqlite_master")}
        for table, rowid in _tables(conn):
            if table not in old_tables:
                continue
            with conn:
                conn.execute(f'DELETE FROM main."{table}"')  # rows the migrations seeded
            kept[table], lost[table] = _copy(conn, table, rowid)
        conn.execute("DETACH DATABASE old")
        with conn:
            for _, sql in triggers:
                conn.execute(sql)
            for (virtual,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'"
            ).fetchall():
                conn.execute(f'INSERT INTO "{virtual}" ("{virtual}") VALUES (\'rebuild\')')
        if _findings(conn):
            raise StoreError(f"the salvaged copy {fresh} does not pass the check either")
    finally:
        conn.close()
    return kept, {t: n for t, n in lost.items() if n}


def _uri_open_ok(path: Path) -> None:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"the database {path} is too damaged to read its tables ({exc}); restore it from "
            "a backup"
        ) from None
    finally:
        conn.close()


async def repair(path: Path) -> Repaired:
    """Mend the damaged database at `path` (see the module). Raises StoreError when nothing
    can be read from it."""
    conn = sqlite3.connect(path)
    try:
        if not _findings(conn):
            return Repaired(None, "sound")
    finally:
        conn.close()
    backup = await asyncio.to_thread(_backup, path)
    if await asyncio.to_thread(_reindex, path):
        return Repaired(backup, "reindexed")
    await asyncio.to_thread(_uri_open_ok, path)
    fresh = path.with_name(f"{path.name}.salvage")
    for stale in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
        stale.unlink(missing_ok=True)
    async with Database.open(fresh):
        pass  # the schema, by the migrations
    kept, lost = await asyncio.to_thread(_salvage, path, fresh)
    for beside in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        beside.unlink(missing_ok=True)  # the damaged file's; kept in the backup
    os.replace(fresh, path)
    for beside in (Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
        beside.unlink(missing_ok=True)
    return Repaired(backup, "salvaged", kept, lost)
