"""The incident engine's per-run state: its last cycle, and the last cycle that could see W&B.
Mixed into `IncidentsRepo`."""

from __future__ import annotations

from datetime import datetime

from bot.core.timeutil import from_db, to_db
from bot.store.db import Database


class EngineState:
    db: Database

    async def engine_state(self, run_slug: str) -> tuple[datetime | None, datetime | None]:
        """(last cycle, last cycle that could see W&B)."""
        row = await self.db.fetchone(
            "SELECT last_detect_at, wandb_seen_at FROM incident_engine_state WHERE run_slug = ?",
            (run_slug,),
        )
        if row is None:
            return None, None
        return from_db(row[0]), from_db(row[1])

    async def set_engine_state(
        self, run_slug: str, last_detect_at: datetime, wandb_seen_at: datetime | None
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO incident_engine_state (run_slug, last_detect_at, wandb_seen_at) "
                "VALUES (?, ?, ?) ON CONFLICT (run_slug) DO UPDATE SET "
                "last_detect_at = MAX(incident_engine_state.last_detect_at, "
                "excluded.last_detect_at), wandb_seen_at = COALESCE(excluded.wandb_seen_at, "
                "incident_engine_state.wandb_seen_at)",
                (run_slug, to_db(last_detect_at), to_db(wandb_seen_at)),
            )
