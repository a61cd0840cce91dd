"""The poll loop's heartbeat: one row, rewritten at the end of every cycle."""

from __future__ import annotations

from datetime import datetime

from bot.core.timeutil import from_db, to_db
from bot.models import PollCycle
from bot.store.db import Database


class CyclesRepo:
    def __init__(self, db: Database):
        self.db = db

    async def record(self, started_at: datetime, finished_at: datetime, interval: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO poll_cycles (id, started_at, finished_at, interval_seconds) "
                "VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "started_at = excluded.started_at, finished_at = excluded.finished_at, "
                "interval_seconds = excluded.interval_seconds",
                (to_db(started_at), to_db(finished_at), float(interval)),
            )

    async def last(self) -> PollCycle | None:
        row = await self.db.fetchone(
            "SELECT started_at, finished_at, interval_seconds FROM poll_cycles WHERE id = 1"
        )
        if row is None:
            return None
        started, finished = from_db(row[0]), from_db(row[1])
        assert started is not None and finished is not None  # NOT NULL columns
        return PollCycle(started, finished, float(row[2]))
