"""Pushed deliveries waiting for their source (`hook_deliveries`): a GitHub webhook delivery is
recorded once by its delivery id, read by the GitHub source, then kept without its payload for
as long as GitHub can redeliver it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core.timeutil import from_db, to_db
from bot.store.db import Database

#: How long a delivery id is remembered (GitHub redelivers for up to 3 days).
KEEP_DELIVERIES = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class Delivery:
    id: int
    hook: str
    delivery_id: str
    event: str
    payload: str
    received_at: datetime


class HooksRepo:
    def __init__(self, db: Database):
        self.db = db

    async def record(
        self, hook: str, delivery_id: str, event: str, payload: str, received_at: datetime
    ) -> bool:
        """Keep a delivery for its source; False if this delivery id was seen before (a
        redelivery), in which case nothing changes."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO hook_deliveries (hook, delivery_id, event, payload, received_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (hook, delivery_id) DO NOTHING",
                (hook, delivery_id, event, payload, to_db(received_at)),
            )
            return cursor.rowcount == 1

    async def pending(self, hook: str, limit: int = 200) -> list[Delivery]:
        """Deliveries not yet read by their source, oldest first."""
        rows = await self.db.fetchall(
            "SELECT id, hook, delivery_id, event, payload, received_at FROM hook_deliveries "
            "WHERE payload IS NOT NULL AND hook = ? ORDER BY id LIMIT ?",
            (hook, limit),
        )
        return [
            Delivery(
                id=row[0],
                hook=row[1],
                delivery_id=row[2],
                event=row[3],
                payload=row[4],
                received_at=from_db(row[5]),  # type: ignore[arg-type]
            )
            for row in rows
        ]

    async def done(self, ids: list[int]) -> None:
        """The source has read these: their payloads go, their ids stay (redeliveries)."""
        if not ids:
            return
        async with self.db.transaction() as conn:
            await conn.executemany(
                "UPDATE hook_deliveries SET payload = NULL WHERE id = ?", [(i,) for i in ids]
            )

    async def prune(self, now: datetime) -> int:
        """Forget read deliveries older than `KEEP_DELIVERIES`."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM hook_deliveries WHERE received_at < ? AND payload IS NULL",
                (to_db(now - KEEP_DELIVERIES),),
            )
            return cursor.rowcount

    async def count(self, hook: str) -> int:
        row = await self.db.fetchone("SELECT count(*) FROM hook_deliveries WHERE hook = ?", (hook,))
        return int(row[0]) if row else 0
