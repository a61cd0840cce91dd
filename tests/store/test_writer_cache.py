"""The writer connection keeps a small page cache. Its pages stay valid across its own commits,
so SQLite's default cache (2,000 KiB) only filled, and chat written to a database smaller than
that gave it a new page every few messages: a bot that grew with every message for thousands
of them. Measured with SQLite's own allocator counter, chat-sized commits one after another."""

from __future__ import annotations

import _sqlite3
import ctypes
from pathlib import Path

from bot.store import Database
from bot.store.db import WRITER_CACHE_KIB

SQLITE = ctypes.CDLL(_sqlite3.__file__)
SQLITE.sqlite3_memory_used.restype = ctypes.c_int64


async def test_chat_written_commit_by_commit_stays_within_the_writers_cache(
    tmp_path: Path,
) -> None:
    async with Database.open(tmp_path / "chat.db") as db:
        (size,) = await db.fetchone("PRAGMA cache_size")  # type: ignore[misc]
        assert size == -WRITER_CACHE_KIB
        await db.conn.execute(
            "CREATE TABLE chat (id INTEGER PRIMARY KEY, key TEXT UNIQUE, body TEXT)"
        )
        before = SQLITE.sqlite3_memory_used()
        for batch in range(400):  # a message or a few per commit, as the bot writes chat
            async with db.transaction() as conn:
                await conn.executemany(
                    "INSERT INTO chat (key, body) VALUES (?, ?)",
                    [(f"discord:msg:{batch:04d}{n}", f"{batch:04d}{n} " * 400) for n in range(5)],
                )
        pages = (await db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
        assert pages * 4096 > 2 * 2_048_000  # far more than SQLite's default cache holds
        grew = SQLITE.sqlite3_memory_used() - before
        # the cache's own bound plus a statement's worth, never the default 2 MB
        assert grew < WRITER_CACHE_KIB * 1024 + 300_000, grew
