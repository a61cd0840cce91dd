"""The SQLite connection: one aiosqlite connection, WAL, foreign keys, a busy timeout, and
numbered migrations (`migrations/NNNN_name.sql`) applied at open. The schema version lives in
`PRAGMA user_version`; a database newer than the code is refused."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import aiosqlite

from bot.store.errors import BUSY_SECONDS, describe_sqlite_error, passing

log = logging.getLogger(__name__)

_MIGRATION_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")


class TransactionLost(Exception):
    """A block inside `Database.savepoint` failed after SQLite had already rolled the whole
    transaction back: the caller must give up the transaction, not go on with it."""


class StoreError(Exception):
    """A database problem a user must act on (e.g. a database from a newer Runscribe)."""


def path_problem(path: str | Path) -> str | None:
    """Why a database cannot live at `path` (a directory, or a file where a folder should be),
    or None when nothing about the path itself is wrong."""
    target = Path(path)
    try:
        if target.is_dir():
            return f"the database path {target} is a directory; name a file in it instead"
        for parent in target.parents:
            if parent.exists() and not parent.is_dir():
                return f"cannot create the database {target}: {parent} is a file, not a folder"
    except OSError as exc:  # a folder on the way that may not be searched
        return (
            f"cannot open the database {target}: {exc.strerror or exc} "
            "(check the path and permissions)"
        )
    return None


def write_problem(path: str | Path) -> str | None:
    """Why this process could not write the database at `path` (a read-only file, a folder it
    may not create files in), or None. Opens the file for writing and writes nothing. A path
    that cannot even be looked at is left to `Database.open`, which names it."""
    try:
        return _write_problem(Path(path))
    except OSError:
        return None


def _write_problem(target: Path) -> str | None:
    if not target.exists():
        folder = next((p for p in target.parents if p.exists()), Path("."))
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            return f"cannot create the database {target}: {folder} is not writable by this user"
        return None
    try:
        os.close(os.open(target, os.O_WRONLY))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return _READ_ONLY.format(path=target)
        return None  # not about writing: Database.open names it
    # WAL mode writes two files beside the database.
    folder = target.parent
    beside = [Path(f"{target}-wal"), Path(f"{target}-shm")]
    if not all(p.exists() for p in beside) and not os.access(folder, os.W_OK | os.X_OK):
        return _READ_ONLY.format(path=target)
    return None


_READ_ONLY = (
    "the database {path} is read-only for this user: make the file (and its folder) writable, "
    "or point RUNSCRIBE_DB at another file"
)


def _probe(path: str) -> None:
    """Open the file once, synchronously: a path that cannot be opened or a file that is not
    SQLite fails here, where nothing outlives the failure (aiosqlite's worker thread would still
    be stopping after a failed connect and could outlive the event loop)."""
    conn = sqlite3.connect(path, timeout=10.0)
    try:
        conn.execute("PRAGMA schema_version")
    finally:
        conn.close()


def existing_problem(path: str | Path) -> str | None:
    """What `Database.open` would refuse in an existing file, found without writing to it (for
    `check-config`): not SQLite, or a schema newer than this code. None when it would open."""
    target = Path(path)
    if not target.is_file():
        return None
    try:
        conn = sqlite3.connect(_reader_uri(str(target)), uri=True, timeout=1.0)
    except sqlite3.Error as exc:
        return _cannot_open(str(target), exc, BUSY_SECONDS).args[0]
    try:
        conn.execute("PRAGMA schema_version")
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        return _cannot_open(str(target), exc, BUSY_SECONDS).args[0]
    finally:
        conn.close()
    migrations = load_migrations()
    latest = migrations[-1].version if migrations else 0
    if current > latest:
        return (
            f"database {target} has schema version {current}, but this Runscribe knows only up "
            f"to {latest}: upgrade Runscribe or use another RUNSCRIBE_DB"
        )
    return None


def rows_if_readable(path: str | Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows of `sql` read from the database at `path` without opening it for writing (for
    `check-config`); [] when there is no file yet, or it is an older database without the table,
    or no database at all: nothing known."""
    if not Path(path).is_file():
        return []
    try:
        conn = sqlite3.connect(_reader_uri(str(path)), uri=True, timeout=2.0)
        try:
            return list(conn.execute(sql).fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def _cannot_open(path: str, exc: BaseException, busy_timeout: float) -> StoreError:
    reason = path_problem(path)
    if reason is None:
        text = str(exc) or type(exc).__name__
        said = describe_sqlite_error(exc, path, busy_timeout)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            reason = f"{path} is not a SQLite database (point RUNSCRIBE_DB at another file)"
        elif said is not None:
            reason = said
        elif "readonly database" in text:
            reason = _READ_ONLY.format(path=path)
        else:
            reason = f"cannot open the database {path}: {text} (check the path and permissions)"
    return StoreError(reason)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    folder = resources.files("bot.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"duplicate migration numbers in {versions}")
    return found


class Database:
    """Owns the connection. Use `async with Database.open(path) as db:`.

    Writes go through `transaction()`, which serialises writers on an asyncio lock (one connection
    is shared by every coroutine) and uses BEGIN IMMEDIATE so a second process waits on
    busy_timeout instead of failing half-way.

    With `readers=N`, N more connections are opened read-only (`mode=ro`); `read_only()` is a
    Database over them, for commands: WAL lets them read while the writer's transaction (a poll
    cycle, an enrichment batch) is open, and each has its own thread, so a command never queues
    behind the writer's work."""

    def __init__(self, conn: aiosqlite.Connection, path: str, busy_timeout: float = BUSY_SECONDS):
        self.conn = conn
        self.path = path
        self.busy_timeout = busy_timeout  # seconds a statement waits for another's lock
        self._write_lock = asyncio.Lock()
        self._reader: ReadOnlyDatabase | None = None
        # Per instance: a transaction open on another Database (another file) must not turn
        # this one's `transaction()` into a no-op that leaves a failed block committed.
        self._in_transaction: ContextVar[bool] = ContextVar(
            f"runscribe_in_transaction_{id(self):x}", default=False
        )

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: str | Path,
        *,
        migrate: bool = True,
        readers: int = 0,
        busy_timeout: float = BUSY_SECONDS,
    ) -> AsyncIterator[Database]:
        """`busy_timeout`: seconds a statement waits for another connection's lock before it
        fails with "database is locked"."""
        path = str(path)
        try:  # a bad path, a file that is not SQLite, no permission: one clear StoreError
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                await asyncio.to_thread(_probe, path)
            conn = await aiosqlite.connect(path, timeout=busy_timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise _cannot_open(path, exc, busy_timeout) from None
        pool: list[aiosqlite.Connection] = []
        try:
            try:
                conn.row_factory = aiosqlite.Row
                await conn.execute("PRAGMA journal_mode=WAL")
                await conn.execute("PRAGMA synchronous=NORMAL")
                await conn.execute("PRAGMA foreign_keys=ON")
                await conn.execute(f"PRAGMA busy_timeout={_millis(busy_timeout)}")
                if path != ":memory:":  # an in-memory database is all cache
                    await conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
                db = cls(conn, path, busy_timeout)
                await db._check_version(migrate)
                if path != ":memory:":
                    for _ in range(readers):
                        pool.append(await _open_reader(path, busy_timeout))
            except (OSError, sqlite3.Error) as exc:
                raise _cannot_open(path, exc, busy_timeout) from None
            if pool:
                db._reader = ReadOnlyDatabase(db, pool)
            yield db
        finally:
            for reader in pool:
                await reader.close()
            await conn.close()

    @property
    def saturated(self) -> bool:
        """A write transaction holds the connection: a read now would queue behind it."""
        return self._write_lock.locked()

    def read_only(self) -> Database:
        """A Database for reads that never wait on this one's writer (its own read-only
        connections when opened with `readers`, else this Database itself)."""
        return self._reader or self

    async def _check_version(self, migrate: bool) -> None:
        migrations = load_migrations()
        latest = migrations[-1].version if migrations else 0
        current = await self.user_version()
        if current > latest:
            raise StoreError(
                f"database {self.path} has schema version {current}, but this Runscribe "
                f"knows only up to {latest}: upgrade Runscribe or use another RUNSCRIBE_DB"
            )
        if current < latest:
            if not migrate:
                raise StoreError(f"database {self.path} needs migrations {current + 1}..{latest}")
            await self._migrate(current, migrations)

    async def user_version(self) -> int:
        async with self.conn.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def _migrate(self, current: int, migrations: list[Migration]) -> None:
        for migration in migrations:
            if migration.version <= current:
                continue
            log.info("applying migration %s", migration.name)
            # executescript commits any open transaction first; wrap the script and the version
            # bump in one explicit transaction so a failed migration leaves nothing half-done.
            script = (
                "BEGIN IMMEDIATE;\n"
                f"{migration.sql}\n"
                f"PRAGMA user_version = {migration.version};\n"
                "COMMIT;"
            )
            try:
                await self.conn.executescript(script)
            except Exception:
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction. Nested use inside the same task joins the outer transaction, so
        a caller can commit events and a cursor together while each repository method stays
        safe to call on its own."""
        if self._in_transaction.get():
            yield self.conn
            return
        async with self._write_lock:
            token = self._in_transaction.set(True)
            try:
                if self.conn.in_transaction:
                    # Left open by a task cancelled while its BEGIN was running (the statement
                    # still ran on aiosqlite's thread) or by a COMMIT that failed: nobody owns
                    # it any more, and every later BEGIN would fail on it.
                    log.warning("rolling back a transaction left open on the connection")
                    await self.conn.execute("ROLLBACK")
                await self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    # SQLite has already rolled back after some errors (a full disk, an
                    # interrupt): a ROLLBACK then would fail and hide the real error.
                    if self.conn.in_transaction:
                        await self.conn.execute("ROLLBACK")
                    raise
                else:
                    await self.conn.execute("COMMIT")
            finally:
                self._in_transaction.reset(token)

    async def writable(self) -> bool:
        """Whether a write commits now: one page written (the schema version, unchanged)."""
        try:
            async with self.transaction() as conn:
                version = await self.user_version()
                await conn.execute(f"PRAGMA user_version = {int(version)}")
        except (sqlite3.Error, OSError):
            return False
        return True

    async def came_back(self, error: Exception) -> bool:
        """A loop's probe (`bot.core.loops.Probe`) while it backs off from `error`: true once a full
        disk or a lock that failed it has passed and the store takes a write again; never for
        other errors (retrying a damaged page or a bug sooner helps nobody)."""
        return passing(error) and await self.writable()

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """Inside `transaction()`: a block whose writes are undone alone when it raises (the
        error goes on to the caller), the rest of the transaction kept. When SQLite has already
        rolled the whole transaction back (a full disk), `TransactionLost` says so instead."""
        if not self._in_transaction.get():
            raise StoreError("a savepoint needs an open transaction")
        await self.conn.execute("SAVEPOINT runscribe_step")
        try:
            yield
        except BaseException as exc:
            if not self.conn.in_transaction:
                # SQLite rolled the whole transaction back (a full disk, an interrupt): the
                # block cannot be undone alone, and nothing after it may run outside it
                raise TransactionLost(str(exc) or type(exc).__name__) from exc
            await self.conn.execute("ROLLBACK TO runscribe_step")
            await self.conn.execute("RELEASE runscribe_step")
            raise
        await self.conn.execute("RELEASE runscribe_step")

    async def fetchall(self, sql: str, params: Any = ()) -> list[aiosqlite.Row]:
        return await _fetchall(self.conn, sql, params)

    async def fetchone(self, sql: str, params: Any = ()) -> aiosqlite.Row | None:
        """The first row of a query of one row (by a key, an aggregate, LIMIT 1)."""
        return await _fetchone(self.conn, sql, params)


async def _fetchall(conn: aiosqlite.Connection, sql: str, params: Any) -> list[aiosqlite.Row]:
    # One trip to the connection's thread. A cursor (execute, fetch, close) is three, and each
    # trip is a hand-over between threads that costs more than a small query itself.
    return list(await conn.execute_fetchall(sql, params))


async def _fetchone(conn: aiosqlite.Connection, sql: str, params: Any) -> aiosqlite.Row | None:
    rows = await _fetchall(conn, sql, params)
    return rows[0] if rows else None


# The writer's page cache. Its pages stay valid across its own commits, so the cache only
# grows until it is full, and new chat gives it new pages to hold: with SQLite's default
# (2,000 KiB) a database that started smaller than that grew the bot by every message's pages
# for the first thousands of messages, which a soak sees as a steady climb. This size is full
# from the start (the migrations check and the integrity check read more than it holds) and
# still keeps the pages every insert touches (each index's newest leaf and the path to it).
WRITER_CACHE_KIB = 256
READER_CACHE_KIB = 512  # each read-only connection's page cache (SQLite's default: 2,000 KiB)


def _reader_uri(path: str) -> str:
    return f"{Path(os.path.abspath(path)).as_uri()}?mode=ro"


def _millis(seconds: float) -> int:
    return max(1, round(seconds * 1000))


async def _open_reader(path: str, busy_timeout: float) -> aiosqlite.Connection:
    uri = await asyncio.to_thread(_reader_uri, path)
    conn = await aiosqlite.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    await conn.execute(f"PRAGMA busy_timeout={_millis(busy_timeout)}")
    await conn.execute("PRAGMA query_only=ON")
    # A reader's page cache is thrown away whenever it begins a read after the writer has
    # committed, which the bot does several times a second: SQLite's default 2 MB cache was
    # filled by one `/timeline` and freed again before the next command, 2 MB of heap churn a
    # command that fragmented the heap (RSS +0.14 MB/min in a soak). Pages come from the OS's
    # file cache either way.
    await conn.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
    return conn


class ReadOnlyDatabase(Database):
    """Reads over a small pool of read-only connections, each query on whichever is free. Each
    statement sees the latest committed data (autocommit); a write is a programming error."""

    def __init__(self, writer: Database, pool: list[aiosqlite.Connection]):
        super().__init__(writer.conn, writer.path, writer.busy_timeout)
        self._free: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        for conn in pool:
            self._free.put_nowait(conn)
        self.size = len(pool)

    def read_only(self) -> Database:
        return self

    @property
    def saturated(self) -> bool:
        """Every read-only connection is in use: a new read would queue."""
        return self._free.empty()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        raise StoreError("a read-only store cannot write")
        yield self.conn  # pragma: no cover - makes this an async generator

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[aiosqlite.Connection]:
        conn = await self._free.get()
        try:
            yield conn
        finally:
            self._free.put_nowait(conn)

    async def fetchall(self, sql: str, params: Any = ()) -> list[aiosqlite.Row]:
        async with self._connection() as conn:
            return await _fetchall(conn, sql, params)

    async def fetchone(self, sql: str, params: Any = ()) -> aiosqlite.Row | None:
        """The first row of a query of one row (by a key, an aggregate, LIMIT 1)."""
        async with self._connection() as conn:
            return await _fetchone(conn, sql, params)
