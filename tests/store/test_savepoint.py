"""`Database.savepoint`: a failed block is undone alone and the transaction goes on; when SQLite
has already rolled the whole transaction back, the caller is told (`TransactionLost`) instead
of writing on outside any transaction."""

from __future__ import annotations

import pytest

from bot.store import Database, Store
from bot.store.db import StoreError, TransactionLost


async def names(db: Database) -> list[str]:
    return [row[0] for row in await db.fetchall("SELECT source FROM source_health ORDER BY source")]


async def test_a_failed_block_is_undone_alone(store: Store) -> None:
    db = store.db
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO source_health (source, scope) VALUES ('a', 'probe')")
        with pytest.raises(RuntimeError):
            async with db.savepoint():
                await conn.execute(
                    "INSERT INTO source_health (source, scope) VALUES ('b', 'probe')"
                )
                raise RuntimeError("this step failed")
        async with db.savepoint():
            await conn.execute("INSERT INTO source_health (source, scope) VALUES ('c', 'probe')")
    assert await names(db) == ["a", "c"]


async def test_a_transaction_sqlite_rolled_back_is_not_written_on(store: Store) -> None:
    db = store.db
    with pytest.raises(TransactionLost):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO source_health (source, scope) VALUES ('a', 'probe')")
            async with db.savepoint():
                await conn.execute("ROLLBACK")  # what SQLite does on a full disk
                raise OSError("database or disk is full")
    assert await names(db) == []
    with pytest.raises(StoreError, match="needs an open transaction"):
        async with db.savepoint():
            pass
