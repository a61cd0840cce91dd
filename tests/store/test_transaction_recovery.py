"""A transaction left open on the shared connection (a task cancelled while its BEGIN ran on
aiosqlite's thread, or a failed COMMIT) must not make every later write fail."""

from __future__ import annotations

from bot.models import RunInfo
from bot.store import Store


async def test_a_stale_open_transaction_is_rolled_back(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="kept", name="Kept"))
    await store.db.conn.execute("BEGIN IMMEDIATE")  # as a cancelled task would leave it
    await store.db.conn.execute("DELETE FROM runs")  # its unfinished work
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    assert [r.slug for r in await store.runs.all()] == ["hero", "kept"]
