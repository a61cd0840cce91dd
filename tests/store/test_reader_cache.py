"""The read-only connections keep a small page cache: SQLite throws a reader's cache away each
time it begins a read after the writer committed, so a large one was only heap churn (2 MB
filled by one `/timeline` and freed before the next). Measured with SQLite's own allocator
counter on a real database of several MB."""

from __future__ import annotations

import _sqlite3
import ctypes
from pathlib import Path

from bot.store import Database
from bot.store.db import READER_CACHE_KIB

SQLITE = ctypes.CDLL(_sqlite3.__file__)
SQLITE.sqlite3_memory_used.restype = ctypes.c_int64
SQLITE.sqlite3_memory_highwater.restype = ctypes.c_int64
SQLITE.sqlite3_memory_highwater.argtypes = [ctypes.c_int]


async def test_a_large_read_after_a_commit_stays_within_the_readers_cache(tmp_path: Path) -> None:
    async with Database.open(tmp_path / "big.db", readers=1) as db:
        await db.conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)")
        async with db.transaction() as conn:
            await conn.executemany(
                "INSERT INTO filler (body) VALUES (?)", [(f"{n:06d}" * 100,) for n in range(20000)]
            )
        pages = (await db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
        assert pages * 4096 > 4 * 2_048_000  # far more than SQLite's default cache holds
        reader = db.read_only()
        (size,) = await reader.fetchone("PRAGMA cache_size")  # type: ignore[misc]
        assert size == -READER_CACHE_KIB
        for round_ in range(3):  # the writer commits between reads, as the bot does
            async with db.transaction() as conn:
                await conn.execute("UPDATE filler SET body = body WHERE id = ?", (round_ + 1,))
            before = SQLITE.sqlite3_memory_used()
            SQLITE.sqlite3_memory_highwater(1)
            rows = await reader.fetchall("SELECT sum(length(body)) FROM filler")
            assert rows[0][0] == 20000 * 600
            grew = SQLITE.sqlite3_memory_highwater(0) - before
            # the cache's own bound plus a statement's worth, never the default 2 MB
            assert grew < READER_CACHE_KIB * 1024 + 300_000, grew
